package replay

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/apply"
	"projector/internal/batching"
	"projector/internal/config"
	"projector/internal/fetch"
	"projector/internal/kafkaconn"
	"projector/internal/records"
)

// span is the part of one partition the replay reads: [First, End).
type span struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	First     int64  `json:"first"`
	End       int64  `json:"end"`
}

// ranges is the replay plan.
type ranges []span

func (r ranges) total() int64 {
	var n int64
	for _, s := range r {
		n += max(s.End-s.First, 0)
	}
	return n
}

// gaps lists partitions whose earliest retained offset is above 0.
func (r ranges) gaps() []string {
	var out []string
	for _, s := range r {
		if s.First > 0 {
			out = append(out, fmt.Sprintf("%s/%d starts at offset %d", s.Topic, s.Partition, s.First))
		}
	}
	return out
}

func (r ranges) String() string {
	var parts []string
	for _, s := range r {
		parts = append(parts, fmt.Sprintf("%s/%d:[%d,%d)", s.Topic, s.Partition, s.First, s.End))
	}
	return strings.Join(parts, " ")
}

// planRanges reads, for every partition of the topics, the earliest offset and
// the group's committed offset (or, toLatest, the end of the partition: its
// last stable offset, the end of what a read_committed reader reads now; a
// transaction still open then is left to the consumers, and the replay
// does not wait for it).
func planRanges(ctx context.Context, cfg config.Config, toLatest bool) (ranges, error) {
	conn, err := kafkaconn.New(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	client := conn.Client(10 * time.Second)
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: cfg.Kafka.Topics})
	if err != nil {
		return nil, fmt.Errorf("read topic metadata: %w", err)
	}
	parts := map[string][]int{}
	req := map[string][]kafka.OffsetRequest{}
	for _, t := range meta.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			parts[t.Name] = append(parts[t.Name], p.ID)
			req[t.Name] = append(req[t.Name], kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
		}
	}
	offs, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: req, IsolationLevel: kafka.ReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	committed, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: cfg.Kafka.GroupID, Topics: parts})
	if err != nil {
		return nil, fmt.Errorf("read committed offsets of group %s: %w", cfg.Kafka.GroupID, err)
	}
	var out ranges
	for topic, ps := range offs.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("offsets of %s/%d: %w", topic, p.Partition, p.Error)
			}
			end := p.LastOffset
			if !toLatest {
				end = p.FirstOffset // never committed: the consumers start from the beginning
				for _, c := range committed.Topics[topic] {
					if c.Partition == p.Partition && c.CommittedOffset >= 0 {
						end = c.CommittedOffset
					}
				}
			}
			out = append(out, span{Topic: topic, Partition: p.Partition, First: p.FirstOffset, End: end})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// batchApplier applies a batch of records: an *apply.Applier after a data
// loss, an *rebuild.CheckOnly or *rebuild.Rebuilder while projections are rebuilt.
type batchApplier interface {
	Apply(ctx context.Context, recs []apply.Record, ranges []apply.Range) (apply.Result, error)
}

// readOption is an optional setting of readAndApply.
type readOption func(*readSettings)

type readSettings struct {
	workers int
	pace    *pacer
}

// withWorkers makes readAndApply apply the batches of n lanes of partitions
// concurrently (n < 2: one lane, the default).
func withWorkers(n int) readOption { return func(s *readSettings) { s.workers = n } }

// withPace makes readAndApply apply its batches at the pace of p (nil: no limit).
func withPace(p *pacer) readOption { return func(s *readSettings) { s.pace = p } }

// readAndApply reads every span at once (one reader per partition) and
// applies the records in batches of up to batch records. The partitions are
// split into lanes (withWorkers; one by default) that apply their batches
// concurrently; within a lane the next batch is read while the previous one
// is applied. Each partition belongs to one lane, so its records reach the
// batches in offset order, which is all the applier's watermarks need.
func readAndApply(ctx context.Context, cfg config.Config, plan ranges, batch int, a batchApplier, sum *Summary, prog *progress, opts ...readOption) error {
	rs := readSettings{workers: 1}
	for _, o := range opts {
		o(&rs)
	}
	conn, err := kafkaconn.New(cfg.Kafka)
	if err != nil {
		return err
	}
	defer conn.Close()
	transport := conn.FetchTransport(cfg.Kafka.Topics)
	defer transport.CloseIdleConnections()
	fo := records.PartitionReader(conn, transport, cfg.Kafka.MaxRecordBytes, 20*time.Millisecond)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex // guards sum
	var lanes sync.WaitGroup
	for _, l := range splitLanes(plan, rs.workers) {
		lanes.Add(1)
		go func() {
			defer lanes.Done()
			own := Summary{ByType: map[string]int64{}}
			err := runLane(ctx, fo, cfg, l, batch, a, &own, prog, rs.pace)
			mu.Lock()
			sum.add(own)
			mu.Unlock()
			if err != nil {
				cancel(err)
			}
		}()
	}
	lanes.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// splitLanes deals the spans that hold records out to at most n lanes by
// partition number: producers key by user, so partition p of every topic
// holds the same users, and keeping them in one lane keeps each user's
// events together in the lane's batches (fewer script calls per event).
// The partition numbers go the largest first, each to the lane with the
// fewest records so far.
func splitLanes(plan ranges, n int) []ranges {
	byNumber := map[int]ranges{}
	var numbers []int
	for _, s := range plan {
		if s.End > s.First {
			if _, ok := byNumber[s.Partition]; !ok {
				numbers = append(numbers, s.Partition)
			}
			byNumber[s.Partition] = append(byNumber[s.Partition], s)
		}
	}
	sort.SliceStable(numbers, func(i, j int) bool {
		a, b := byNumber[numbers[i]].total(), byNumber[numbers[j]].total()
		return a > b || a == b && numbers[i] < numbers[j]
	})
	lanes := make([]ranges, min(max(n, 1), len(numbers)))
	for _, p := range numbers {
		least := 0
		for i := range lanes {
			if lanes[i].total() < lanes[least].total() {
				least = i
			}
		}
		lanes[least] = append(lanes[least], byNumber[p]...)
	}
	return lanes
}

// runLane reads the lane's spans (one reader per partition, with fo) and
// applies their records in batches, in order, reading the next one while
// the previous one is applied and, with an applier that can (preparer),
// planning it too (see applySteps).
func runLane(ctx context.Context, fo fetch.Options, cfg config.Config, lane ranges, batch int, a batchApplier, sum *Summary, prog *progress, pace *pacer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	records := make(chan kafka.Message, 8192)
	var readers sync.WaitGroup
	for _, s := range lane {
		readers.Add(1)
		go func() {
			defer readers.Done()
			if err := readSpan(ctx, fo, s, records); err != nil {
				cancel(err)
			}
		}()
	}
	go func() { readers.Wait(); close(records) }()
	batches := make(chan []kafka.Message, 1)
	go gather(ctx, records, pacedBatch(batch, int(pace.limit())), batches)
	prepared := make(chan *step)
	go func() {
		defer close(prepared)
		for msgs := range batches {
			if err := pace.wait(ctx, len(msgs)); err != nil {
				cancel(err)
				return
			}
			st, err := prepareStep(ctx, msgs, cfg.Kafka.MaxRecordBytes, a)
			if err != nil {
				cancel(err)
				return
			}
			select {
			case prepared <- st:
			case <-ctx.Done():
				st.release()
				return
			}
		}
	}()
	applySteps(ctx, cancel, prepared, a, sum, prog)
	return context.Cause(ctx)
}

// readSpan sends the messages of one span to out, in offset order: its
// committed records, and placeholders of the offsets it skips (transaction
// markers, records of aborted transactions), the last one cut at the end of
// the span. fo's fetches should wait little for records at the end of the
// partition (20 ms): a handover's pause may include that wait.
func readSpan(ctx context.Context, fo fetch.Options, s span, out chan<- kafka.Message) error {
	r := fetch.NewReader(fo, s.Topic, s.Partition, s.First)
	for {
		m, err := r.Next(ctx)
		if err != nil {
			return fmt.Errorf("read %s/%d: %w", s.Topic, s.Partition, err)
		}
		m, in := fetch.Clamp(m, s.End-1)
		if !in {
			return nil
		}
		select {
		case out <- m:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if m.Offset >= s.End-1 {
			return nil
		}
	}
}

// gather cuts the records into batches of up to size records, of one
// partition number where it can (see internal/batching); it closes out when
// the records end or ctx does.
func gather(ctx context.Context, in <-chan kafka.Message, size int, out chan<- []kafka.Message) {
	defer close(out)
	g := batching.New(size)
	send := func(b []kafka.Message) bool {
		select {
		case out <- b:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for m := range in {
		g.Add(m)
		if g.Full() && !send(g.Take()) {
			return
		}
	}
	for g.Len() > 0 {
		if !send(g.Take()) {
			return
		}
	}
}

// describeRanges names the offsets a batch covers, for error messages.
func describeRanges(rgs []apply.Range) string {
	parts := make([]string, len(rgs))
	for i, r := range rgs {
		parts[i] = fmt.Sprintf("%s/%d:%d-%d", r.Topic, r.Partition, r.First, r.Last)
	}
	return strings.Join(parts, " ")
}

// commitOffsets commits the end of every span for the group (--to latest).
// Kafka accepts it only while the group has no active member.
func commitOffsets(ctx context.Context, cfg config.Config, plan ranges) error {
	conn, err := kafkaconn.New(cfg.Kafka)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := conn.Client(10 * time.Second)
	topics := map[string][]kafka.OffsetCommit{}
	for _, s := range plan {
		topics[s.Topic] = append(topics[s.Topic], kafka.OffsetCommit{Partition: s.Partition, Offset: s.End})
	}
	res, err := client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: cfg.Kafka.GroupID, GenerationID: -1, Topics: topics})
	if err != nil {
		return fmt.Errorf("commit replayed offsets for group %s (stop the consumers first): %w", cfg.Kafka.GroupID, err)
	}
	for topic, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return fmt.Errorf("commit %s/%d for group %s (stop the consumers first): %w", topic, p.Partition, cfg.Kafka.GroupID, p.Error)
			}
		}
	}
	return nil
}
