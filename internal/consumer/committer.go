package consumer

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/records"
)

// committer commits the offsets of applied batches, in order, in a goroutine
// of its own, so the next batch is applied while the broker commits the last
// one. At most one batch waits for its commit; a third waits in add.
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
		for msgs := range cm.jobs {
			if cm.failed() != nil {
				continue // commit nothing after a gap
			}
			start := time.Now()
			if err := c.commit(wctx, to, msgs); err != nil {
				cm.mu.Lock()
				cm.err = err
				cm.mu.Unlock()
				continue
			}
			if took := time.Since(start); took > slowBatch {
				c.log.Warn("slow offset commit", zap.Int("records", len(msgs)), zap.Duration("took", took))
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

// commit commits, through to, the highest offset of every partition in the batch.
func (c *Consumer) commit(ctx context.Context, to Committer, msgs []kafka.Message) error {
	last := records.Highest(msgs)
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
