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

// committer commits the offsets of applied batches, in order, in a goroutine
// of its own, so the next batch is applied while the broker commits the last
// one. A commit is a write to the broker's offsets log, so on live traffic
// (a batch every few milliseconds) it commits at most once per CommitEvery:
// the batches applied meanwhile are gathered and their highest offsets
// committed together. Committing later costs nothing but records delivered
// again after a crash, which their idempotency markers make harmless, with
// two exceptions that the consumer hands over as such:
//   - a batch that dead-lettered poison is committed at once, with the ones
//     gathered before it: the marks that keep a redelivered poison record
//     from being dead-lettered twice live in Redis, which can go back in
//     time, so its commit keeps that window as short as a batch's;
//   - when Redis is found to have gone back in time or not ready (its status
//     in px:meta:{g}, read again before each commit), the batches gathered
//     are dropped, not committed: they may have been applied to a state Redis
//     lost, and a replay rebuilds up to the committed offsets, so a commit
//     must not cover records that no replay and no repair applies again (the
//     consumer reads them again: a repair applies them, or after a replay it
//     resumes from the committed offsets).
type committer struct {
	jobs     chan commitJob
	finished chan struct{}
	mu       sync.Mutex
	err      error // the commit that failed for good; later batches are not committed
}

// commitJob is what the consumer hands the committer: an applied batch,
// to be committed at once or with the next gathered commit, or (drop) the
// order to forget the batches gathered so far.
type commitJob struct {
	msgs []kafka.Message
	now  bool
	drop bool
}

// startCommitter starts committing through to; after ctx ends, the batches
// handed over are still committed for up to ShutdownGrace (see close).
func (c *Consumer) startCommitter(ctx context.Context, to Committer) *committer {
	cm := &committer{jobs: make(chan commitJob, 1), finished: make(chan struct{})}
	go func() {
		defer close(cm.finished)
		wctx, cancel := c.workContext(ctx)
		defer cancel()
		var last time.Time // when the last commit started
		for job := range cm.jobs {
			pending := map[offsets.TopicPartition]kafka.Message{}
			open := true
			if !job.drop {
				records.AddHighest(pending, job.msgs)
				if !job.now {
					open = cm.gather(pending, time.Until(last.Add(c.opts.CommitEvery)))
				}
			}
			if len(pending) > 0 && cm.failed() == nil && c.stillReady(wctx) { // nothing is committed after a failed commit
				last = time.Now()
				if err := c.commit(wctx, to, pending); err != nil {
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

// gather adds to pending the highest offsets of the batches handed over
// within wait, until one is to be committed at once; a drop empties it. It
// reports false when close ended the wait.
func (cm *committer) gather(pending map[offsets.TopicPartition]kafka.Message, wait time.Duration) bool {
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case job, ok := <-cm.jobs:
			switch {
			case !ok:
				return false
			case job.drop:
				clear(pending)
			default:
				records.AddHighest(pending, job.msgs)
				if job.now {
					return true
				}
			}
		}
	}
}

func (cm *committer) failed() error {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.err
}

// add hands an applied batch over for its commit, at once when now (it
// dead-lettered poison); it fails once a commit has.
func (cm *committer) add(msgs []kafka.Message, now bool) error {
	if err := cm.failed(); err != nil {
		return err
	}
	cm.jobs <- commitJob{msgs: msgs, now: now}
	return nil
}

// drop forgets the batches handed over and not yet committed: Redis went
// back in time or is not ready, and their records may be among those it lost.
func (cm *committer) drop() {
	cm.jobs <- commitJob{drop: true}
}

// close commits the batches handed over at once, waits until they are
// committed (or a commit failed for good) and returns that failure.
func (cm *committer) close() error {
	close(cm.jobs)
	<-cm.finished
	return cm.failed()
}

// stillReady reports whether px:meta:{g} says ready, so that gathered
// batches are committed (a replay may be starting from the committed offsets
// otherwise; a status that cannot be read counts as not ready).
func (c *Consumer) stillReady(ctx context.Context) bool {
	status, err := c.meta.Status(ctx)
	if err != nil || status != coord.StatusReady {
		c.log.Info("batches applied but not committed: projections not ready, they are read again", zap.String("status", status), zap.Error(err))
		return false
	}
	return true
}

// commit commits, through to, the offset after each partition's record in last.
func (c *Consumer) commit(ctx context.Context, to Committer, last map[offsets.TopicPartition]kafka.Message) error {
	out := make([]kafka.Message, 0, len(last))
	for _, m := range last {
		out = append(out, m)
	}
	return c.retry(ctx, "commit", func(ctx context.Context) error {
		if err := to.CommitMessages(ctx, out...); err != nil {
			return kafkaFailed(c.metrics.KafkaCommitErrors, err)
		}
		c.metrics.Commits.Inc()
		return nil
	})
}
