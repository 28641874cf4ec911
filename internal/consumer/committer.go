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

// committer finishes applied batches in a goroutine of its own, so the
// next batch is applied meanwhile: it writes their poison records to the
// dead-letter topic, then commits their offsets. Both are requests to the
// broker (a produce, an append to its offsets log), so on live traffic (a
// batch every few milliseconds) it finishes at most once per CommitEvery:
// the batches applied meanwhile are gathered, their poison dead-lettered in
// one write and their highest offsets committed together. Finishing later
// costs nothing but records delivered again after a crash, which their
// idempotency markers and the dead-letter marks make harmless.
type committer struct {
	jobs     chan finishJob
	finished chan struct{}
	mu       sync.Mutex
	err      error // the step that failed for good; later batches are not committed
}

// finishJob is one applied batch: its records and its poison.
type finishJob struct {
	msgs []kafka.Message
	bad  []records.Poison
}

// pending is what the committer gathered: the highest record of each
// partition and the poison to dead-letter.
type pending struct {
	last map[offsets.TopicPartition]kafka.Message
	bad  []records.Poison
}

func (p *pending) add(j finishJob) {
	records.AddHighest(p.last, j.msgs)
	p.bad = append(p.bad, j.bad...)
}

// startCommitter starts finishing batches through to; after ctx ends, the
// batches handed over are still finished for up to ShutdownGrace (see close).
func (c *Consumer) startCommitter(ctx context.Context, to Committer) *committer {
	cm := &committer{jobs: make(chan finishJob, 1), finished: make(chan struct{})}
	go func() {
		defer close(cm.finished)
		wctx, cancel := c.workContext(ctx)
		defer cancel()
		var last time.Time // when the last commit started
		for j := range cm.jobs {
			p := pending{last: map[offsets.TopicPartition]kafka.Message{}}
			p.add(j)
			open := cm.gather(&p, time.Until(last.Add(c.opts.CommitEvery)))
			if cm.failed() != nil {
				continue // commit nothing after a gap
			}
			last = time.Now()
			if err := c.finish(wctx, to, p); err != nil {
				cm.mu.Lock()
				cm.err = err
				cm.mu.Unlock()
			} else if took := time.Since(last); took > slowBatch {
				c.log.Warn("slow dead-letter write and offset commit", zap.Int("partitions", len(p.last)), zap.Int("poison", len(p.bad)), zap.Duration("took", took))
			}
			if !open {
				return
			}
		}
	}()
	return cm
}

// gather adds to p the batches handed over within wait; it reports false
// when close ended the wait.
func (cm *committer) gather(p *pending, wait time.Duration) bool {
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case j, ok := <-cm.jobs:
			if !ok {
				return false
			}
			p.add(j)
		}
	}
}

func (cm *committer) failed() error {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.err
}

// add hands an applied batch and its poison over; it fails once finishing
// a batch has.
func (cm *committer) add(msgs []kafka.Message, bad []records.Poison) error {
	if err := cm.failed(); err != nil {
		return err
	}
	cm.jobs <- finishJob{msgs: msgs, bad: bad}
	return nil
}

// close waits until every batch handed over is finished (or finishing one
// failed for good) and returns that failure.
func (cm *committer) close() error {
	close(cm.jobs)
	<-cm.finished
	return cm.failed()
}

// finish dead-letters p's poison, then commits, through to, the offset
// after each partition's record in p, retrying each with backoff.
func (c *Consumer) finish(ctx context.Context, to Committer, p pending) error {
	if err := c.retry(ctx, "dead-letter", func(ctx context.Context) error { return c.deadLetter(ctx, p.bad) }); err != nil {
		return err
	}
	out := make([]kafka.Message, 0, len(p.last))
	for _, m := range p.last {
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
