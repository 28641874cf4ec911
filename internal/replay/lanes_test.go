package replay

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"projector/internal/apply"
	"projector/internal/config"
	"projector/internal/gen"
)

// recordingApplier records the ranges of every batch it is given, per
// partition, and holds the first batch until a second one is applied at the
// same time (so the test fails if the lanes never overlap).
type recordingApplier struct {
	mu       sync.Mutex
	next     map[string]int64 // partition -> the offset its next batch must start at
	errs     []string
	inFlight int
	overlap  chan struct{} // closed when two batches were applied at once
	once     sync.Once
}

func (a *recordingApplier) Apply(ctx context.Context, recs []apply.Record, rgs []apply.Range) (apply.Result, error) {
	a.mu.Lock()
	for _, r := range rgs {
		tp := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
		if want, ok := a.next[tp]; ok && r.First != want {
			a.errs = append(a.errs, fmt.Sprintf("%s: batch starts at %d, want %d", tp, r.First, want))
		}
		a.next[tp] = r.Last + 1
	}
	a.inFlight++
	if a.inFlight > 1 {
		a.once.Do(func() { close(a.overlap) })
	}
	a.mu.Unlock()
	select { // the first batches wait for a concurrent one; later ones pass at once
	case <-a.overlap:
	case <-time.After(30 * time.Second): // one lane only: the test fails below
	case <-ctx.Done():
	}
	a.mu.Lock()
	a.inFlight--
	a.mu.Unlock()
	out := make([]apply.Outcome, len(recs))
	for i := range out {
		out[i] = apply.Applied
	}
	return apply.Result{Outcomes: out}, nil
}

// TestLanesApplyConcurrentlyInPartitionOrder: with three lanes, batches of
// different partitions are applied at the same time, while each partition's
// batches follow each other in offset order, from the span's first offset to
// its end, every record once.
// logInKfake produces log into an in-process broker (the topics of the
// default configuration with partitions each, and a one-partition dead-letter
// topic) and returns the configuration that reads it.
func logInKfake(tb testing.TB, partitions int32, log []gen.Record) config.Config {
	tb.Helper()
	cfg := config.Defaults()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, cfg.Kafka.Topics...), kfake.SeedTopics(1, cfg.Kafka.DLQTopic))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(kc.Close)
	w := &kafka.Writer{Addr: kafka.TCP(kc.ListenAddrs()...), Balancer: &kafka.Hash{}, BatchSize: 1000, BatchTimeout: time.Millisecond}
	defer w.Close()
	for i := 0; i < len(log); i += 5000 {
		var msgs []kafka.Message
		for _, r := range log[i:min(i+5000, len(log))] {
			msgs = append(msgs, kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value})
		}
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			tb.Fatal(err)
		}
	}
	cfg.Embedded = false
	cfg.Kafka.Brokers = kc.ListenAddrs()
	return cfg
}

func TestLanesApplyConcurrentlyInPartitionOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gc := gen.DefaultConfig()
	gc.Seed = 7
	cfg := logInKfake(t, 3, gen.New(gc).Log(6000))
	plan, err := planRanges(ctx, cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	// Start one partition in the middle, as a resumed replay does.
	plan[0].First = plan[0].End / 2
	a := &recordingApplier{next: map[string]int64{}, overlap: make(chan struct{})}
	for _, s := range plan {
		a.next[fmt.Sprintf("%s/%d", s.Topic, s.Partition)] = s.First
	}
	sum := Summary{ByType: map[string]int64{}}
	if err := readAndApply(ctx, cfg, plan, 200, a, &sum, newProgress(nil, false, plan.total()), withWorkers(3)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.overlap:
	default:
		t.Errorf("no two batches were applied at the same time with 3 lanes")
	}
	for _, e := range a.errs {
		t.Error(e)
	}
	for _, s := range plan {
		tp := fmt.Sprintf("%s/%d", s.Topic, s.Partition)
		if a.next[tp] != s.End {
			t.Errorf("%s: applied up to %d, want the span's end %d", tp, a.next[tp]-1, s.End-1)
		}
	}
	if sum.Events != plan.total() {
		t.Errorf("summary counts %d records, the plan holds %d", sum.Events, plan.total())
	}
}

// TestSplitLanesByPartitionNumber: partition p of every topic goes to one
// lane, the lanes balanced by records.
func TestSplitLanesByPartitionNumber(t *testing.T) {
	plan := ranges{{Topic: "a", Partition: 0, First: 0, End: 100}, {Topic: "a", Partition: 1, First: 0, End: 60},
		{Topic: "a", Partition: 2, First: 0, End: 50}, {Topic: "a", Partition: 3, First: 5, End: 5},
		{Topic: "b", Partition: 0, First: 0, End: 10}, {Topic: "b", Partition: 1, First: 0, End: 30}, {Topic: "b", Partition: 2, First: 0, End: 10}}
	lanes := splitLanes(plan, 2)
	if len(lanes) != 2 || lanes[0].total() != 110 || lanes[1].total() != 150 {
		t.Fatalf("lanes %v, want partition 0 (110 records) and partitions 1 and 2 (150)", lanes)
	}
	for _, l := range lanes {
		for _, s := range l {
			for _, o := range lanes {
				if &o[0] != &l[0] && slices.ContainsFunc(o, func(x span) bool { return x.Partition == s.Partition }) {
					t.Errorf("partition number %d is in two lanes: %v", s.Partition, lanes)
				}
			}
		}
	}
	if got := splitLanes(plan, 8); len(got) != 3 {
		t.Errorf("8 lanes over 3 partition numbers with records: %d lanes, want 3", len(got))
	}
	if got := splitLanes(plan, 0); len(got) != 1 || got[0].total() != plan.total() {
		t.Errorf("0 lanes: %v, want one lane of everything", got)
	}
}

func TestRemainingStartsAfterWatermarks(t *testing.T) {
	plan := ranges{{Topic: "v", Partition: 0, First: 0, End: 100}, {Topic: "v", Partition: 1, First: 10, End: 20},
		{Topic: "v", Partition: 2, First: 0, End: 30}}
	got := remaining(plan, map[string]string{"v:0": "41", "v:1": "25", "other:0": "7"})
	want := ranges{{Topic: "v", Partition: 0, First: 42, End: 100}, {Topic: "v", Partition: 1, First: 20, End: 20},
		{Topic: "v", Partition: 2, First: 0, End: 30}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("remaining = %v, want %v", got, want)
	}
	if got.total() != 58+0+30 {
		t.Errorf("total %d", got.total())
	}
}
