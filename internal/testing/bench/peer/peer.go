// Package peer is the benchmark's cost reference: an at-least-once consumer
// written as a careful user of a pipelined Redis sink (Redis Kafka Connect,
// Redpanda Connect's Redis outputs) would write it. It reads the topics with
// the same kafka-go reader settings and batch size as projector's consumer,
// plans every event with projector's own planner (pkg/projections), applies
// each batch's writes with projector's own rules and encoding, one script
// call per user and one for the global writes, in one pipeline
// (wire.Unguarded), and commits the batch's offsets after the pipeline: no
// idempotency markers, no watermarks, no coalescing. It differs from
// projector's consumer only in what exactly-once adds. It is wrong under
// redelivery by design (a redelivered event is counted again); it exists to
// be measured against.
package peer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"projector/internal/apply/wire"
	"projector/internal/config"
	"projector/internal/fetch"
	"projector/internal/kafkaconn"
	"projector/internal/records"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// Peer consumes the topics of its configuration as a member of its group.
type Peer struct {
	cfg     config.Config
	sink    *wire.Unguarded
	planner *projections.Planner
	metrics *Metrics
	now     func() time.Time
}

// New returns a peer writing through rdb with the kafka., batch.,
// projections., redis.key_prefix and time_zone keys of cfg. now is the
// clock (writes whose key would already have expired are left out).
func New(cfg config.Config, rdb redis.UniversalClient, m *Metrics, now func() time.Time) (*Peer, error) {
	planner, err := projections.NewPlanner(cfg.Projections, cfg.Location, cfg.Redis.KeyPrefix)
	if err != nil {
		return nil, fmt.Errorf("peer: build projections: %w", err)
	}
	return &Peer{cfg: cfg, sink: wire.NewUnguarded(rdb), planner: planner, metrics: m, now: now}, nil
}

// newReader reads as projector's group member (records.GroupReader): the
// same group semantics (manual, synchronous commits; earliest offset for a
// new group; committed records only), fetch sizes, wait and queue.
func newReader(cfg config.Config, conn *kafkaconn.Conn) *fetch.Group {
	return fetch.NewGroup(records.GroupReader(conn, cfg.Kafka.GroupID, cfg.Kafka.Topics,
		cfg.Kafka.MaxRecordBytes, cfg.Batch.MaxEvents))
}

// job is one planned batch for the writer.
type job struct {
	groups  [][]projections.Write // one user's writes each, then the global ones
	commits []kafka.Message       // the last record of each partition
	records int
}

// Run consumes until ctx ends (nil then) or a fetch, the pipeline or a
// commit fails. Batches are gathered and planned while the previous one is
// written (one batch in flight, as a sink's put overlaps the next poll);
// the writer sends each batch's pipeline and then commits its offsets, in
// log order.
func (p *Peer) Run(ctx context.Context) error {
	conn, err := kafkaconn.New(p.cfg.Kafka)
	if err != nil {
		return fmt.Errorf("peer: kafka connection: %w", err)
	}
	defer conn.Close()
	r := newReader(p.cfg, conn)
	defer r.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan kafka.Message)
	fetchErr := make(chan error, 1)
	go func() { fetchErr <- pump(ctx, r, in) }()
	jobs := make(chan job)
	written := make(chan error, 1)
	go func() {
		err := p.writer(ctx, r, jobs)
		if err != nil {
			cancel() // ends the gathering
		}
		written <- err
	}()
	var (
		batch []kafka.Message
		plan  []projections.Write
	)
	for {
		batch, err = gather(ctx, in, batch[:0], p.cfg.Batch.MaxEvents, p.cfg.Batch.MaxWait)
		if err != nil {
			cancel()
			if werr := <-written; werr != nil {
				return werr
			}
			if ctx.Err() != nil && !errors.Is(err, errFetch) {
				return nil
			}
			return <-fetchErr
		}
		var j job
		j.groups, plan = p.plan(batch, plan)
		j.commits, j.records = lastPerPartition(batch), len(batch)
		select {
		case jobs <- j:
		case err := <-written:
			return err
		}
	}
}

// writer writes and commits the jobs until ctx ends (nil then) or a
// pipeline or commit fails.
func (p *Peer) writer(ctx context.Context, r *fetch.Group, jobs <-chan job) error {
	for {
		var j job
		select {
		case j = <-jobs:
		case <-ctx.Done():
			return nil
		}
		if err := p.write(ctx, j.groups); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := r.CommitMessages(ctx, j.commits...); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("peer: commit: %w", err)
		}
		p.metrics.batch(j.records)
	}
}

// errFetch is gather's error once the pump has stopped on a failed fetch.
var errFetch = errors.New("peer: the fetch stopped")

// pump fetches records into out until ctx ends or a fetch fails, then
// closes out.
func pump(ctx context.Context, r *fetch.Group, out chan<- kafka.Message) error {
	defer close(out)
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return fmt.Errorf("peer: fetch: %w", err)
		}
		select {
		case out <- m:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// gather appends records of in to batch as projector's batcher
// (internal/consumer) closes its batches: it waits for the first record,
// then takes more until the batch holds maxEvents, or maxWait has passed
// since the first and the newest record is near its partition's high
// watermark (caught up: live traffic waits about maxWait), or no record came
// for a whole maxWait, or 20 x maxWait have passed. Behind the log, batches
// are full: the reader's queue fills while the previous batch is written.
func gather(ctx context.Context, in <-chan kafka.Message, batch []kafka.Message, maxEvents int, maxWait time.Duration) ([]kafka.Message, error) {
	var (
		m  kafka.Message
		ok bool
	)
	select {
	case m, ok = <-in:
		if !ok {
			return batch, errFetch
		}
	case <-ctx.Done():
		return batch, ctx.Err()
	}
	batch = append(batch, m)
	since, quiet := time.Now(), false
	behind := m.HighWaterMark-m.Offset-1 >= int64(max(maxEvents/4, 1))
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	for len(batch) < maxEvents {
		select {
		case m, ok = <-in:
			if !ok {
				return batch, errFetch
			}
			batch = append(batch, m)
			behind = m.HighWaterMark-m.Offset-1 >= int64(max(maxEvents/4, 1))
			quiet = false
		case <-timer.C:
			if !behind || quiet || time.Since(since) >= 20*maxWait {
				return batch, nil
			}
			quiet = true
			timer.Reset(maxWait)
		case <-ctx.Done():
			return batch, ctx.Err()
		}
	}
	return batch, nil
}

// plan decodes and plans every record of batch and returns its writes
// grouped as the sink applies them: per user in the order of their first
// record, then the global writes, each in log order. Poison records are
// counted and skipped (a sink's errors.tolerance=all); duplicates are
// applied again. scratch is the planner's buffer, returned for the next batch.
func (p *Peer) plan(batch []kafka.Message, scratch []projections.Write) ([][]projections.Write, []projections.Write) {
	now := p.now()
	var g wire.Groups
	for i := range batch {
		if _, skipped := fetch.SkippedOf(batch[i]); skipped {
			continue // transaction markers, records of aborted transactions: committed past, nothing to write
		}
		ev, err := events.Decode(batch[i].Value)
		if err != nil {
			p.metrics.Poison.Inc()
			continue
		}
		scratch = p.planner.Plan(ev, now, scratch[:0])
		g.Add(ev.UserID, scratch)
	}
	return g.All(), scratch
}

// write applies the groups in one pipeline and fails on the first failed call.
func (p *Peer) write(ctx context.Context, groups [][]projections.Write) error {
	if _, err := p.sink.Apply(ctx, groups); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	p.metrics.Calls.Add(float64(len(groups)))
	return nil
}

// lastPerPartition returns the last record of each partition of batch: the
// offsets to commit.
func lastPerPartition(batch []kafka.Message) []kafka.Message {
	type tp struct {
		topic     string
		partition int
	}
	last := map[tp]kafka.Message{}
	for _, m := range batch {
		last[tp{m.Topic, m.Partition}] = m
	}
	out := make([]kafka.Message, 0, len(last))
	for _, m := range last {
		out = append(out, m)
	}
	return out
}
