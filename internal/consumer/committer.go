package consumer

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/coord"
	"projector/internal/offsets"
	"projector/internal/records"
)

// committer dead-letters the poison records of applied batches and then
// commits their offsets, in order, in a goroutine of its own, so the next
// batch is applied meanwhile. A commit is a write to the broker's offsets
// log and a dead-letter write a produce request, so on live traffic (a batch
// every few milliseconds) it does both at most once per CommitEvery, for the
// batches applied meanwhile together. Committing later costs nothing but
// records delivered again after a crash or a rebalance, which their
// idempotency markers make harmless, and the dead-letter marks and view
// (deadLetterView) keep their poison records from being dead-lettered twice.
//
// A commit covers only records Redis holds: a partition's offset is
// committed once px:meta:{g} says ready and the partition's lowest watermark
// (the global one, and each master's) has reached it. Redis that went back in
// time, or is being rebuilt, keeps the offsets waiting: a repair applies the
// lost records again and raises the watermarks, and a replay rebuilds up to
// the committed offsets, after which the consumer reads again from them
// (errReread), so no commit skips records that Redis does not hold.
type committer struct {
	jobs     chan commitJob
	finished chan struct{}
	mu       sync.Mutex
	err      error // the commit that failed for good; later batches are not committed
}

// commitJob is an applied batch handed to the committer with its poison records.
type commitJob struct {
	msgs []kafka.Message
	bad  []records.Poison
}

// startCommitter starts committing through to; after ctx ends, the batches
// handed over are still committed for up to ShutdownGrace (see close).
func (c *Consumer) startCommitter(ctx context.Context, to Committer) *committer {
	cm := &committer{jobs: make(chan commitJob, 1), finished: make(chan struct{})}
	go func() {
		defer close(cm.finished)
		wctx, cancel := c.workContext(ctx)
		defer cancel()
		pending := map[offsets.TopicPartition]kafka.Message{} // the highest applied message of each partition not committed yet
		var poison []records.Poison                           // the poison records of those batches, not dead-lettered yet
		var last time.Time                                    // when the last commit was tried
		for {
			var deadline <-chan time.Time
			var timer *time.Timer
			if len(pending) > 0 {
				timer = time.NewTimer(time.Until(last.Add(c.opts.CommitEvery)))
				deadline = timer.C
			}
			open, due := true, false
			select {
			case job, ok := <-cm.jobs:
				open = ok
				records.AddHighest(pending, job.msgs)
				poison = append(poison, job.bad...)
			case <-deadline:
				due = true
			}
			if timer != nil {
				timer.Stop()
			}
			if open && !due && time.Since(last) < c.opts.CommitEvery {
				continue
			}
			if len(pending) > 0 && cm.failed() == nil { // nothing is committed after a failed commit
				last = time.Now()
				err := c.retry(wctx, "dead-letter", func(ctx context.Context) error { return c.deadLetter(ctx, poison) })
				if err == nil {
					poison = nil
					err = c.commitHeld(wctx, to, pending)
				}
				if err != nil {
					cm.mu.Lock()
					cm.err = err
					cm.mu.Unlock()
				} else if took := time.Since(last); took > slowBatch {
					c.log.Warn("slow offset commit", zap.Int("partitions", len(pending)), zap.Duration("took", took))
				}
			}
			if !open {
				return
			}
		}
	}()
	return cm
}

func (cm *committer) failed() error {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.err
}

// add hands an applied batch over for its commit, with its poison records
// to dead-letter first; it fails once a commit has.
func (cm *committer) add(msgs []kafka.Message, bad []records.Poison) error {
	if err := cm.failed(); err != nil {
		return err
	}
	cm.jobs <- commitJob{msgs: msgs, bad: bad}
	return nil
}

// close commits what Redis holds of the batches handed over, waits until
// that is done (or a commit failed for good) and returns that failure.
func (cm *committer) close() error {
	close(cm.jobs)
	<-cm.finished
	return cm.failed()
}

// commitHeld commits, through to, the messages of pending whose offsets
// Redis holds (see committer) and removes them from pending; the others
// stay. Redis that cannot be read holds nothing for now.
func (c *Consumer) commitHeld(ctx context.Context, to Committer, pending map[offsets.TopicPartition]kafka.Message) error {
	status, err := c.meta.Status(ctx)
	if err != nil || status != coord.StatusReady {
		c.log.Debug("offsets not committed: projections not ready", zap.String("status", status), zap.Error(err))
		return nil
	}
	ev, err := c.meta.ReadEvidence(ctx)
	if err != nil {
		c.log.Debug("offsets not committed: watermarks not read", zap.Error(err))
		return nil
	}
	out := make([]kafka.Message, 0, len(pending))
	for tp, m := range pending {
		if low, _, ok := ev.Lowest(tp.String()); ok && low >= m.Offset {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil
	}
	if err := c.retry(ctx, "commit", func(ctx context.Context) error {
		if err := to.CommitMessages(ctx, out...); err != nil {
			return kafkaFailed(c.metrics.KafkaCommitErrors, err)
		}
		c.metrics.Commits.Inc()
		return nil
	}); err != nil {
		return err
	}
	for _, m := range out {
		delete(pending, records.Of(m))
	}
	return nil
}
