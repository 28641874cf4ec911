package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/offsets"
	"projector/internal/records"
)

// pendingPrefix marks the dead-letter intent fields in the gate: records of a
// partition up to that offset may have been written to the dead-letter topic
// by a process that stopped before recording that it had.
const pendingPrefix = "p:"

// deadLetter publishes poison records to the dead-letter topic (same key and
// value, headers error, source-topic, source-partition, source-offset), each
// exactly once: it records the intent, writes, then records completion; a
// redelivered record whose intent was recorded but not its completion is
// looked up in the dead-letter topic before it is written again.
func (c *Consumer) deadLetter(ctx context.Context, bad []records.Poison) error {
	if len(bad) == 0 {
		return nil
	}
	var fields, parts []string
	seen := map[string]bool{}
	for _, p := range bad {
		f := records.Of(p.Msg).String()
		if !seen[f] {
			seen[f] = true
			fields = append(fields, f, pendingPrefix+f)
			parts = append(parts, f)
		}
	}
	if err := c.claim(ctx, parts); err != nil {
		return err
	}
	defer func() { _ = c.gate.Release(context.WithoutCancel(ctx), parts, c.owner) }()
	marks, err := c.gate.Done(ctx, fields)
	if err != nil {
		return fmt.Errorf("read dead-letter marks: %w", err)
	}
	var todo, uncertain []records.Poison
	for _, p := range bad {
		f := records.Of(p.Msg).String()
		if d, ok := marks[f]; ok && p.Msg.Offset <= d {
			continue
		}
		if d, ok := marks[pendingPrefix+f]; ok && p.Msg.Offset <= d {
			uncertain = append(uncertain, p)
			continue
		}
		todo = append(todo, p)
	}
	if len(uncertain) > 0 {
		present, err := c.kafka.DeadLettered(ctx)
		if err != nil {
			return kafkaFailed(c.metrics.DeadLetterErrors, fmt.Errorf("look for earlier dead letters: %w", err))
		}
		for _, p := range uncertain {
			if !present[offsets.Origin(p.Msg.Topic, p.Msg.Partition, p.Msg.Offset)] {
				todo = append(todo, p)
			}
		}
	}
	if len(todo) == 0 {
		return c.mark(ctx, bad, "")
	}
	if err := c.mark(ctx, todo, pendingPrefix); err != nil {
		return err
	}
	out := make([]kafka.Message, 0, len(todo))
	for _, p := range todo {
		out = append(out, records.DeadLetter(p))
	}
	if err := c.kafka.DeadLetters.WriteMessages(ctx, out...); err != nil {
		return kafkaFailed(c.metrics.DeadLetterErrors, fmt.Errorf("write %d records to dead-letter topic %s: %w", len(out), c.opts.DLQTopic, err))
	}
	for _, p := range todo {
		c.metrics.DeadLettered.WithLabelValues(p.Msg.Topic).Inc()
		c.poisonLog.Log(ReasonClass(p.Reason), zap.String("topic", p.Msg.Topic), zap.Int("partition", p.Msg.Partition),
			zap.Int64("offset", p.Msg.Offset), zap.String("reason", p.Reason))
	}
	return c.mark(ctx, bad, "")
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

// mark raises the gate's fields (prefix + "topic:partition") to the highest offset of recs.
func (c *Consumer) mark(ctx context.Context, recs []records.Poison, prefix string) error {
	marks := map[string]int64{}
	for _, p := range recs {
		f := prefix + records.Of(p.Msg).String()
		marks[f] = max(marks[f], p.Msg.Offset)
	}
	return c.retry(ctx, "dead-letter mark", func(ctx context.Context) error { return c.gate.Mark(ctx, marks) })
}
