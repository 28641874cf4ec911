package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/offsets"
	"projector/internal/records"
)

// dropRepeats removes records that repeat an offset already in the batch:
// after a rebalance the group member delivers a partition again from its
// committed offset, so records still gathered for a batch can come twice (a
// poison record would then be dead-lettered twice). Each partition's
// records stay in order.
func dropRepeats(msgs []kafka.Message) []kafka.Message {
	last := make(map[offsets.TopicPartition]int64, 16)
	var out []kafka.Message
	for i, m := range msgs {
		tp := records.Of(m)
		if l, ok := last[tp]; ok && m.Offset <= l {
			if out == nil {
				out = append(make([]kafka.Message, 0, len(msgs)), msgs[:i]...)
			}
			continue
		}
		last[tp] = m.Offset
		if out != nil {
			out = append(out, m)
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// slowBatch is the duration above which a batch, or a commit, is logged.
const slowBatch = time.Second

// process applies one batch and hands it, with its poison records, to the
// committer (which dead-letters them before it commits the batch). It keeps
// retrying Redis with backoff; after ctx ends it retries for ShutdownGrace
// more. After Redis was rebuilt by a replay it applies nothing and returns
// errReread.
func (c *Consumer) process(ctx context.Context, msgs []kafka.Message, cm *committer) error {
	start := time.Now()
	msgs = dropRepeats(msgs)
	recs, bad, ranges := records.Split(msgs, c.opts.MaxRecordBytes)
	wctx, cancel := c.workContext(ctx)
	defer cancel()
	var res apply.Result
	repairing := false // Redis went back in time: apply the batch with Repair from now on
	err := c.retry(wctx, "apply", func(wctx context.Context) error {
		for {
			var err error
			c.pause.applying.Lock()
			if repairing {
				res, err = c.applier.Repair(wctx, recs, ranges)
			} else {
				res, err = c.applier.Apply(wctx, recs, ranges)
			}
			c.pause.applying.Unlock()
			var ge *apply.GapError
			if errors.As(err, &ge) {
				repairing = true
				if err := c.repair(wctx, lostBefore(ge, ranges)); err != nil && !errors.Is(err, errUnrepairable) {
					return err
				}
				continue
			}
			var nr *apply.NotReadyError
			if !errors.As(err, &nr) {
				return err
			}
			c.report(nr.Status)
			if err := c.waitReady(ctx); err != nil {
				return err
			}
			select {
			case <-c.ready.rebuilt: // a replay rebuilt Redis up to the committed offsets
				return errReread
			default: // a handover's pause: the batch is applied now
			}
		}
	})
	if err != nil {
		if errors.Is(err, errShutdown) {
			c.log.Warn("stopping with a batch not applied: it stays uncommitted")
			return nil
		}
		return err
	}
	c.observe(recs, bad, res)
	took := time.Since(start)
	if took > slowBatch {
		c.log.Warn("slow batch", zap.Int("records", len(msgs)), zap.Int("poison", len(bad)), zap.Duration("took", took))
	}
	c.metrics.BatchDuration.Observe(took.Seconds())
	c.metrics.BatchEvents.Observe(float64(len(recs) + len(bad))) // placeholders of skipped offsets are no events
	return cm.add(msgs, bad)
}

// workContext lives until ShutdownGrace after ctx ends, so the batch in flight can finish.
func (c *Consumer) workContext(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(c.opts.ShutdownGrace, cancel)
		context.AfterFunc(wctx, func() { t.Stop() })
	})
	return wctx, func() { stop(); cancel() }
}

// retry runs f until it succeeds or ctx ends, backing off from 50ms to 5s.
func (c *Consumer) retry(ctx context.Context, what string, f func(context.Context) error) error {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if errors.Is(err, errShutdown) || errors.Is(err, errReread) {
			return err
		}
		if err == nil {
			if attempt > 1 {
				c.log.Info("recovered", zap.String("step", what), zap.Int("attempts", attempt))
				c.health.SetReady(true, "")
			}
			return nil
		}
		c.countFailure(what, err)
		c.health.SetReady(false, what+" failing: "+err.Error())
		c.log.Warn("retrying", zap.String("step", what), zap.Int("attempt", attempt), zap.Duration("backoff", backoff), zap.Error(err))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: gave up, batch left uncommitted: %w", what, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// observe counts a batch's outcomes.
func (c *Consumer) observe(recs []apply.Record, bad []records.Poison, res apply.Result) {
	var newest int64
	for i, r := range recs {
		t := string(r.Event.Type)
		switch res.Outcomes[i] {
		case apply.Applied:
			c.metrics.Events.WithLabelValues(t, "applied").Inc()
			newest = max(newest, r.Event.TS)
		case apply.Duplicate:
			c.metrics.Events.WithLabelValues(t, "duplicate").Inc()
			c.metrics.Duplicates.Inc()
		case apply.Skipped:
			c.metrics.Events.WithLabelValues(t, "skipped").Inc()
		}
	}
	for range bad {
		c.metrics.Events.WithLabelValues("unknown", "poison").Inc()
	}
	c.metrics.KeysWritten.Add(float64(res.Writes))
	c.metrics.ScriptCalls.WithLabelValues("user").Add(float64(res.UserCalls))
	c.metrics.ScriptCalls.WithLabelValues("global").Add(float64(res.GlobalCalls))
	if newest > 0 {
		c.metrics.LastAppliedEventTimestamp.Set(float64(newest) / 1000)
	}
}
