package consumer

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/offsets"
	"projector/internal/records"
)

// committer commits the offsets of applied batches, in order, in a goroutine
// of its own, so the next batch is applied while the broker commits the last
// one. A commit is a write to the broker's offsets log, so on live traffic
// (a batch every few milliseconds) it commits at most once per CommitEvery:
// the batches applied meanwhile are gathered and their highest offsets
// committed together. Committing later costs nothing but records delivered
// again after a crash, which their idempotency markers make harmless.
type committer struct {
	jobs     chan []kafka.Message
	finished chan struct{}
	mu       sync.Mutex
	err      error // the commit that failed for good; later batches are not committed
}

// startCommitter starts committing through to; after ctx ends, the batches
// handed over are still committed for up to ShutdownGrace (see close).
func (c *Consumer) startCommitter(ctx context.Context, to Committer) *committer {
	cm := &committer{jobs: make(chan []kafka.Message, 1), finished: make(chan struct{})}
	go func() {
		defer close(cm.finished)
		wctx, cancel := c.workContext(ctx)
		defer cancel()
		var last time.Time // when the last commit started
		for msgs := range cm.jobs {
			pending := records.Highest(msgs)
			open := cm.gather(pending, time.Until(last.Add(c.opts.CommitEvery)))
			if cm.failed() != nil {
				continue // commit nothing after a gap
			}
			last = time.Now()
			if err := c.commit(wctx, to, pending); err != nil {
				cm.mu.Lock()
				cm.err = err
				cm.mu.Unlock()
			} else if took := time.Since(last); took > slowBatch {
				c.log.Warn("slow offset commit", zap.Int("partitions", len(pending)), zap.Duration("took", took))
			}
			if !open {
				return
			}
		}
	}()
	return cm
}

// gather adds to pending the highest offsets of the batches handed over
// within wait; it reports false when close ended the wait.
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
		case msgs, ok := <-cm.jobs:
			if !ok {
				return false
			}
			records.AddHighest(pending, msgs)
		}
	}
}

func (cm *committer) failed() error {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.err
}

// add hands an applied batch over for its commit; it fails once a commit has.
func (cm *committer) add(msgs []kafka.Message) error {
	if err := cm.failed(); err != nil {
		return err
	}
	cm.jobs <- msgs
	return nil
}

// close waits until every batch handed over is committed (or a commit failed
// for good) and returns that failure.
func (cm *committer) close() error {
	close(cm.jobs)
	<-cm.finished
	return cm.failed()
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
