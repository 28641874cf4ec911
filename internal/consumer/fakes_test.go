package consumer

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/coord"
	"projector/internal/obs"
	"projector/internal/offsets"
	"projector/internal/records"
	"projector/pkg/events"
)

// errDown is the failure the fakes return while told to fail.
var errDown = errors.New("fake: down")

// journal is the order in which the fakes saw things happen, shared by all of them.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.events...)
}

// failer fails the first n calls.
type failer struct {
	mu    sync.Mutex
	n     int
	calls int
}

func (f *failer) fail() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.n > 0 {
		f.n--
		return true
	}
	return false
}

func (f *failer) set(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n = n
}

func (f *failer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// fakeCommitter keeps the committed offset (the next to read) of each
// partition; a commit that includes an offset in stuck always fails.
type fakeCommitter struct {
	failer
	j         *journal
	stuck     map[int64]bool
	mu        sync.Mutex
	committed map[offsets.TopicPartition]int64
}

func (f *fakeCommitter) CommitMessages(_ context.Context, msgs ...kafka.Message) error {
	if f.fail() || slices.ContainsFunc(msgs, func(m kafka.Message) bool { return f.stuck[m.Offset] }) {
		f.j.add("commit failed")
		return errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range msgs {
		f.committed[records.Of(m)] = m.Offset + 1
	}
	f.j.add("commit")
	return nil
}

func (f *fakeCommitter) offsets() map[offsets.TopicPartition]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[offsets.TopicPartition]int64{}
	for k, v := range f.committed {
		out[k] = v
	}
	return out
}

// fakeWriter is the dead-letter topic. lostAck makes a write land but report failure.
type fakeWriter struct {
	failer
	j       *journal
	lostAck bool
	mu      sync.Mutex
	written []kafka.Message
}

func (f *fakeWriter) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	fail := f.fail()
	if fail && !f.lostAck {
		f.j.add("dead-letter failed")
		return errDown
	}
	f.mu.Lock()
	f.written = append(f.written, msgs...)
	f.mu.Unlock()
	if fail {
		f.j.add("dead-letter written, ack lost")
		return errDown
	}
	f.j.add("dead-letter")
	return nil
}

func (f *fakeWriter) Close() error { return nil }

// origins returns the origins of the dead letters written.
func (f *fakeWriter) origins() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.written {
		var t, p, o string
		for _, h := range m.Headers {
			switch h.Key {
			case "source-topic":
				t = string(h.Value)
			case "source-partition":
				p = string(h.Value)
			case "source-offset":
				o = string(h.Value)
			}
		}
		out = append(out, t+":"+p+":"+o)
	}
	return out
}

// fakeApplier applies a record once per origin: an event id seen at another
// origin is a duplicate, the same origin again changes nothing (as the apply
// script's markers do). applied counts the records whose effects it wrote.
type fakeApplier struct {
	failer
	j       *journal
	mu      sync.Mutex
	origins map[string]string // event id -> origin
	applied int
	batches [][]apply.Record
	// gaps: the next Apply of a batch whose first range starts at one of
	// these offsets reports that Redis went back in time to just below it
	// (a gap with nothing lost before the batch).
	gaps map[int64]bool
	// notReady: the next Apply calls refuse their batch with these meta
	// statuses, one each.
	notReady []string
	// wm is the watermark of each partition ("topic:partition"): the last
	// offset of the ranges applied.
	wm map[string]int64
	// losing: partitions whose applied records Redis loses at once (their
	// watermarks stay where they are).
	losing map[string]bool
}

// lose makes Redis lose what is applied to the partition from now on.
func (f *fakeApplier) lose(tp string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.losing == nil {
		f.losing = map[string]bool{}
	}
	f.losing[tp] = true
}

// setWatermark sets a partition's watermark, as Redis going back in time
// or a replay does; Redis holds what is applied to it from now on.
func (f *fakeApplier) setWatermark(tp string, off int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wm[tp] = off
	delete(f.losing, tp)
}

func (f *fakeApplier) watermarks() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.wm)
}

func (f *fakeApplier) Apply(_ context.Context, recs []apply.Record, ranges []apply.Range) (apply.Result, error) {
	if f.fail() {
		f.j.add("apply failed")
		return apply.Result{}, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.notReady) > 0 {
		status := f.notReady[0]
		f.notReady = f.notReady[1:]
		f.j.add("not ready")
		return apply.Result{}, &apply.NotReadyError{Status: status}
	}
	if len(ranges) > 0 && f.gaps[ranges[0].First] {
		delete(f.gaps, ranges[0].First)
		f.j.add("gap")
		r := ranges[0]
		return apply.Result{}, &apply.GapError{Gaps: []apply.Gap{{Topic: r.Topic, Partition: r.Partition, Applied: r.First - 1}}}
	}
	f.batches = append(f.batches, recs)
	res := apply.Result{Outcomes: make([]apply.Outcome, len(recs))}
	for i, r := range recs {
		o := offsets.Origin(r.Topic, r.Partition, r.Offset)
		switch prev, ok := f.origins[r.Event.ID]; {
		case !ok:
			f.origins[r.Event.ID] = o
			f.applied++
			res.Writes++
			res.Outcomes[i] = apply.Applied
		case prev == o:
			res.Outcomes[i] = apply.Applied
		default:
			res.Outcomes[i] = apply.Duplicate
		}
	}
	for _, r := range ranges {
		if tp := r.TP().String(); !f.losing[tp] {
			f.wm[tp] = max(f.wm[tp], r.Last)
		}
	}
	f.j.add("apply")
	return res, nil
}

func (f *fakeApplier) Repair(ctx context.Context, recs []apply.Record, ranges []apply.Range) (apply.Result, error) {
	return f.Apply(ctx, recs, ranges)
}

func (f *fakeApplier) effects() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// fakeMeta is px:meta:{g}: its status and how often a first start created it.
type fakeMeta struct {
	mu      sync.Mutex
	status  string
	created int
	applier *fakeApplier // its watermarks are the evidence
}

func (f *fakeMeta) Status(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, nil
}

func (f *fakeMeta) setStatus(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = s
}

func (f *fakeMeta) Token(context.Context) (string, error) { return "", nil }

func (f *fakeMeta) Init(context.Context, map[string]string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created++
	f.status = coord.StatusReady
	return true, nil
}

func (f *fakeMeta) MarkRolledBack(context.Context, string) error { return nil }

func (f *fakeMeta) ReadEvidence(context.Context) (apply.Evidence, error) {
	return apply.Evidence{Global: f.applier.watermarks()}, nil
}

func (f *fakeMeta) Identity(context.Context) (map[string]string, error) { return nil, nil }

// rig is a consumer over fakes, with the real dead-letter gate on miniredis.
type rig struct {
	c       *Consumer
	j       *journal
	commits *fakeCommitter
	dlq     *fakeWriter
	applier *fakeApplier
	meta    *fakeMeta
	m       *obs.Metrics
	h       *obs.Health
	// committed is what the group has committed before the consumer started.
	committed map[offsets.TopicPartition]int64
	// lookups counts reads of the dead-letter topic.
	lookups atomic.Int32
	// redis holds the dead-letter marks.
	redis *miniredis.Miniredis
}

// generationReader is a session's group member as far as the dead-letter
// view sees it: a generation number.
type generationReader struct {
	Reader
	gen int64
}

func (g generationReader) Generation() int64 { return g.gen }

func newRig(t *testing.T) *rig {
	t.Helper()
	j := &journal{}
	r := &rig{j: j, commits: &fakeCommitter{j: j, committed: map[offsets.TopicPartition]int64{}},
		dlq: &fakeWriter{j: j}, applier: &fakeApplier{j: j, origins: map[string]string{}, wm: map[string]int64{}},
		m: obs.NewMetrics(), committed: map[offsets.TopicPartition]int64{}}
	r.meta = &fakeMeta{status: coord.StatusReady, applier: r.applier}
	r.h = obs.NewHealth(r.m)
	mr := miniredis.RunT(t)
	r.redis = mr
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	k := Kafka{
		Reader:      func([]string) Reader { t.Fatal("the core tests build no reader"); return nil },
		DeadLetters: r.dlq,
		Committed: func(context.Context) (map[offsets.TopicPartition]int64, error) {
			return r.committed, nil
		},
		DeadLettered: func(context.Context) (map[string]bool, error) {
			r.lookups.Add(1)
			present := map[string]bool{}
			for _, o := range r.dlq.origins() {
				present[o] = true
			}
			return present, nil
		},
	}
	opts := Options{GroupID: "g", Topics: []string{"views", "orders"}, DLQTopic: "dlq", MaxRecordBytes: 1 << 20,
		MaxEvents: 100, MaxWait: time.Millisecond, ShutdownGrace: time.Millisecond}
	r.c = NewWith(opts, k, r.applier, r.meta, records.NewDLQMarks(rdb, ""), r.m, r.h, zap.NewNop())
	return r
}

// event is a valid record of topic/partition at offset.
func event(t *testing.T, topic string, partition int, offset int64, id string) kafka.Message {
	t.Helper()
	b, err := events.Encode(events.Event{ID: id, Type: events.Click, TS: 1_700_000_000_000, UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	return kafka.Message{Topic: topic, Partition: partition, Offset: offset, Key: []byte("u1"), Value: b}
}

// poison is a record of topic/partition at offset that is not an event.
func poison(topic string, partition int, offset int64) kafka.Message {
	return kafka.Message{Topic: topic, Partition: partition, Offset: offset, Key: []byte("u1"), Value: []byte("{not json")}
}
