package consumer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/coord"
	"projector/internal/fetch"
	"projector/internal/offsets"
	"projector/internal/records"
)

// Redis going back in time (a restart from an older RDB snapshot, an AOF
// that lost its tail, a lagging replica promoted) leaves the watermarks in
// Redis below records that were applied, and often committed, before. The
// idempotency markers and watermarks went back together with the
// projections, so applying those records again from the older state is
// exact: the consumer reads them again from Kafka and applies them (without
// dead-lettering their poison records: committed batches had theirs
// dead-lettered, and the committer dead-letters those of the batches it holds
// before committing them), then goes on. It finds out in two ways: the apply
// script refuses a batch whose partition's watermark lies below the batch's
// first offset - 1 (see apply.GapError), and watchRollback compares the
// group's committed offsets with the watermarks (see rollwatch.go).

// lost is a range of one partition whose records must be applied again.
type lost struct {
	Topic     string
	Partition int
	From, To  int64  // inclusive
	Node      string // the master that went back in time ("" for the global watermarks)
}

func (l lost) String() string {
	where := ""
	if l.Node != "" {
		where = " on master " + l.Node
	}
	return fmt.Sprintf("%s:%d offsets %d-%d%s", l.Topic, l.Partition, l.From, l.To, where)
}

// errUnrepairable says the records lost cannot be applied again exactly; the
// consumer marked the projections for a replay.
var errUnrepairable = errors.New("redis went back in time beyond what can be repaired")

// lostBefore turns the gaps that stopped a batch into the ranges to apply
// again before it: from each gap's applied offset + 1 up to the batch's first
// offset of that partition - 1 (a gap inside the batch is covered when the
// batch itself is applied again with Repair).
func lostBefore(ge *apply.GapError, ranges []apply.Range) []lost {
	first := map[offsets.TopicPartition]int64{}
	for _, r := range ranges {
		first[r.TP()] = r.First
	}
	byTP := map[offsets.TopicPartition]lost{}
	for _, g := range ge.Gaps {
		tp := offsets.TopicPartition{Topic: g.Topic, Partition: g.Partition}
		f, ok := first[tp]
		if !ok || g.Applied+1 > f-1 {
			continue
		}
		l, seen := byTP[tp]
		if !seen || g.Applied+1 < l.From {
			byTP[tp] = lost{Topic: g.Topic, Partition: g.Partition, From: g.Applied + 1, To: f - 1, Node: g.Node}
		}
	}
	return sortedLost(byTP)
}

func sortedLost(m map[offsets.TopicPartition]lost) []lost {
	out := make([]lost, 0, len(m))
	for _, l := range m {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// repair applies the lost ranges again, one chunk of at most MaxEvents
// records at a time (their poison records are dead-lettered, or will be, with
// the commit of the batches that held them). Redis going back in time once
// more while it runs ends it with that *apply.GapError, for the caller to
// start again from the new gaps. A range that cannot be repaired exactly
// (Kafka no longer holds its beginning, or it is older than
// idempotency.window) marks the projections for a replay and returns
// errUnrepairable.
func (c *Consumer) repair(ctx context.Context, ls []lost) error {
	if len(ls) == 0 {
		return nil
	}
	var total int64
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.String()
		total += l.To - l.From + 1
	}
	c.metrics.RedisRollbacks.Inc()
	c.log.Error("Redis went back in time: it lost records applied before; applying them again from Kafka",
		zap.String("lost", strings.Join(names, ", ")), zap.Int64("offsets", total))
	c.health.SetReady(false, "redis went back in time: applying "+strings.Join(names, ", ")+" again")
	c.metrics.RollbackRecords.Set(float64(total))
	defer c.metrics.RollbackRecords.Set(0)
	left := total
	var reapplied int64
	client := c.opts.Kafka.Client(10 * time.Second)
	for _, l := range ls {
		if err := c.checkRepairable(ctx, client, l); err != nil {
			return err
		}
		n, err := c.reapply(ctx, l, func(done int64) {
			c.metrics.RollbackRecords.Set(float64(left - done))
		})
		reapplied += n
		if err != nil {
			return err
		}
		left -= l.To - l.From + 1
	}
	c.log.Info("records lost by Redis applied again", zap.String("lost", strings.Join(names, ", ")), zap.Int64("records", reapplied))
	c.health.SetReady(true, "")
	return nil
}

// checkRepairable refuses a range whose records Kafka no longer holds, or
// whose first record is older than idempotency.window (duplicates of events
// before it may no longer be recognised): then the projections are marked
// for a replay.
func (c *Consumer) checkRepairable(ctx context.Context, client *kafka.Client, l lost) error {
	res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		l.Topic: {kafka.FirstOffsetOf(l.Partition)},
	}})
	if err != nil {
		return kafkaFailed(c.metrics.KafkaFetchErrors, fmt.Errorf("read the first offset of %s:%d: %w", l.Topic, l.Partition, err))
	}
	for _, p := range res.Topics[l.Topic] {
		if p.Partition != l.Partition {
			continue
		}
		if p.Error != nil {
			return kafkaFailed(c.metrics.KafkaFetchErrors, fmt.Errorf("read the first offset of %s:%d: %w", l.Topic, l.Partition, p.Error))
		}
		if p.FirstOffset > l.From {
			return c.refuseRepair(ctx, l, fmt.Sprintf("Kafka no longer holds offsets %d-%d (the partition begins at %d)", l.From, p.FirstOffset-1, p.FirstOffset))
		}
	}
	return nil
}

// refuseRepair marks the projections for a replay (status rolled_back) and logs why.
func (c *Consumer) refuseRepair(ctx context.Context, l lost, why string) error {
	c.log.Error(fmt.Sprintf("Redis went back in time beyond what can be repaired: it lost %s, and %s; stopped applying and committing. "+
		"Rebuild with `replayer` (same configuration); consumers resume on their own afterwards", l, why))
	if err := c.meta.MarkRolledBack(ctx, l.String()+": "+why); err != nil {
		return err
	}
	c.report(coord.StatusRolledBack)
	return errUnrepairable
}

// reapply reads one lost range from Kafka (committed records only, as the
// group member reads) and applies it with Repair, in chunks; progress is
// called with the offsets covered so far. It returns the records applied
// again.
func (c *Consumer) reapply(ctx context.Context, l lost, progress func(done int64)) (int64, error) {
	transport := c.opts.Kafka.FetchTransport([]string{l.Topic})
	defer transport.CloseIdleConnections()
	r := fetch.NewReader(records.PartitionReader(c.opts.Kafka, transport, c.opts.MaxRecordBytes, 250*time.Millisecond),
		l.Topic, l.Partition, l.From)
	chunk := max(c.opts.MaxEvents, 1)
	var (
		msgs  []kafka.Message
		read  int      // records among msgs (the rest are placeholders of skipped offsets)
		first = l.From // the first offset of the chunk's range
		n     int64
	)
	flush := func(last int64) error {
		recs, _, _ := records.Split(msgs, c.opts.MaxRecordBytes)
		rg := []apply.Range{{Topic: l.Topic, Partition: l.Partition, First: first, Last: last}}
		for {
			c.pause.applying.Lock()
			_, err := c.applier.Repair(ctx, recs, rg)
			c.pause.applying.Unlock()
			var nr *apply.NotReadyError
			if !errors.As(err, &nr) {
				if err != nil {
					return err
				}
				break
			}
			c.report(nr.Status)
			if err := c.waitReady(ctx); err != nil {
				return err
			}
		}
		n += int64(read)
		c.metrics.RollbackReapplied.Add(float64(read))
		progress(last - l.From + 1)
		msgs, read, first = msgs[:0], 0, last+1
		return nil
	}
	checked := false
	for first <= l.To {
		m, err := r.Next(ctx)
		if err != nil {
			return n, kafkaFailed(c.metrics.KafkaFetchErrors, fmt.Errorf("read %s:%d again: %w", l.Topic, l.Partition, err))
		}
		m, in := fetch.Clamp(m, l.To) // a placeholder may reach past the range
		if !in {
			return n, flush(l.To)
		}
		if _, skipped := fetch.SkippedOf(m); !skipped {
			if !checked {
				checked = true
				if age := c.opts.Now().Sub(m.Time); c.opts.Window > 0 && age > c.opts.Window {
					return n, c.refuseRepair(ctx, l, fmt.Sprintf("its first record is %s old, more than idempotency.window (%s)", age.Round(time.Second), c.opts.Window))
				}
			}
			read++
		}
		msgs = append(msgs, m)
		if m.Offset == l.To {
			return n, flush(l.To)
		}
		if len(msgs) >= chunk {
			if err := flush(m.Offset); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// repairLost applies lost ranges again between batches, retrying Redis like
// a batch and starting again from the new gaps when Redis goes back in time
// once more.
func (c *Consumer) repairLost(ctx context.Context, ls []lost) error {
	wctx, cancel := c.workContext(ctx)
	defer cancel()
	err := c.retry(wctx, "repair", func(ctx context.Context) error {
		err := c.repair(ctx, ls)
		var ge *apply.GapError
		if errors.As(err, &ge) {
			if ls, err = c.findLost(ctx); err == nil {
				err = fmt.Errorf("redis went back in time again while lost records were applied again: %w", ge)
			}
		}
		if errors.Is(err, errUnrepairable) {
			return nil
		}
		return err
	})
	if errors.Is(err, errShutdown) || ctx.Err() != nil {
		return nil
	}
	return err
}
