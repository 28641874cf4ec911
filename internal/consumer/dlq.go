package consumer

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/offsets"
	"projector/internal/records"
)

// deadLetterView is what a consumer knows of the dead-letter topic beyond
// the marks in Redis: the origins (offsets.Origin) of its newest records,
// read at the first poison record of a group generation that the marks do
// not cover, and of the records written since. The marks can go back in
// time with Redis; the topic cannot. A partition's earlier owner (another
// member, or this one in an earlier generation) may have dead-lettered
// records it never committed, so each generation reads the topic afresh;
// a write that failed may have landed, so it is read again after one.
type deadLetterView struct {
	generation int64
	origins    map[string]bool // nil: read it before use
}

// deadLetter publishes poison records to the dead-letter topic (same key and
// value, headers error, source-topic, source-partition, source-offset), each
// exactly once: a record is written unless the marks (px:dlq:{g}) or the
// view of the topic (deadLetterView) hold it, and the marks are raised
// after the write.
func (c *Consumer) deadLetter(ctx context.Context, bad []records.Poison) error {
	if len(bad) == 0 {
		return nil
	}
	var parts []string
	seen := map[string]bool{}
	for _, p := range bad {
		f := records.Of(p.Msg).String()
		if !seen[f] {
			seen[f] = true
			parts = append(parts, f)
		}
	}
	if err := c.claim(ctx, parts); err != nil {
		return err
	}
	defer func() { _ = c.gate.Release(context.WithoutCancel(ctx), parts, c.owner) }()
	marks, err := c.gate.Done(ctx, parts)
	if err != nil {
		return fmt.Errorf("read dead-letter marks: %w", err)
	}
	var todo []records.Poison
	once := map[string]bool{} // a partition delivered again (a rebalance) repeats its poison in bad
	for _, p := range bad {
		if d, ok := marks[records.Of(p.Msg).String()]; ok && p.Msg.Offset <= d {
			continue
		}
		if o := originOf(p); !once[o] {
			once[o] = true
			todo = append(todo, p)
		}
	}
	if len(todo) > 0 {
		written, err := c.deadLettered(ctx)
		if err != nil {
			return err
		}
		todo = slices.DeleteFunc(todo, func(p records.Poison) bool {
			return written[originOf(p)]
		})
	}
	if len(todo) > 0 {
		out := make([]kafka.Message, 0, len(todo))
		for _, p := range todo {
			out = append(out, records.DeadLetter(p))
		}
		if err := c.kafka.DeadLetters.WriteMessages(ctx, out...); err != nil {
			c.dlqView.origins = nil // the write may have landed
			return kafkaFailed(c.metrics.DeadLetterErrors, fmt.Errorf("write %d records to dead-letter topic %s: %w", len(out), c.opts.DLQTopic, err))
		}
		for _, p := range todo {
			c.dlqView.origins[originOf(p)] = true
			c.metrics.DeadLettered.WithLabelValues(p.Msg.Topic).Inc()
			c.poisonLog.Log(ReasonClass(p.Reason), zap.String("topic", p.Msg.Topic), zap.Int("partition", p.Msg.Partition),
				zap.Int64("offset", p.Msg.Offset), zap.String("reason", p.Reason))
		}
	}
	return c.mark(ctx, bad)
}

// originOf names the record of p as the dead-letter topic's headers do.
func originOf(p records.Poison) string {
	return offsets.Origin(p.Msg.Topic, p.Msg.Partition, p.Msg.Offset)
}

// deadLettered returns the consumer's view of the dead-letter topic, read
// again when the group generation changed or a write failed.
func (c *Consumer) deadLettered(ctx context.Context) (map[string]bool, error) {
	gen := c.generation()
	if c.dlqView.origins != nil && c.dlqView.generation == gen {
		return c.dlqView.origins, nil
	}
	origins, err := c.kafka.DeadLettered(ctx)
	if err != nil {
		return nil, kafkaFailed(c.metrics.DeadLetterErrors, fmt.Errorf("look for earlier dead letters: %w", err))
	}
	c.dlqView = deadLetterView{generation: gen, origins: origins}
	return origins, nil
}

// claimTTL bounds how long a claim on dead-lettering a partition stands when
// its owner stops before releasing it.
const claimTTL = 30 * time.Second

// claim waits until this consumer holds the claim on dead-lettering the
// partitions (another consumer may be finishing the same batch after a rebalance).
func (c *Consumer) claim(ctx context.Context, parts []string) error {
	for logged := false; ; {
		holder, err := c.gate.Claim(ctx, parts, c.owner, claimTTL)
		if err != nil {
			return err
		}
		if holder == "" {
			return nil
		}
		if !logged {
			c.log.Info("another consumer is dead-lettering records of these partitions: waiting for it",
				zap.Strings("partitions", parts), zap.String("holder", holder))
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// mark raises the gate's fields ("topic:partition") to the highest offset of recs.
func (c *Consumer) mark(ctx context.Context, recs []records.Poison) error {
	marks := map[string]int64{}
	for _, p := range recs {
		f := records.Of(p.Msg).String()
		marks[f] = max(marks[f], p.Msg.Offset)
	}
	return c.retry(ctx, "dead-letter mark", func(ctx context.Context) error { return c.gate.Mark(ctx, marks) })
}
