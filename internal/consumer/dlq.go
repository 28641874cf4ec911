package consumer

import (
	"context"
	"fmt"
	"strconv"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
)

// deadLetter publishes poison records to the dead-letter topic (same key and
// value, headers error, source-topic, source-partition, source-offset), except
// those an earlier delivery of the batch already published.
func (c *Consumer) deadLetter(ctx context.Context, bad []Poison) error {
	if len(bad) == 0 {
		return nil
	}
	var fields []string
	seen := map[string]bool{}
	for _, p := range bad {
		f := field(p.Msg.Topic, p.Msg.Partition)
		if !seen[f] {
			seen[f] = true
			fields = append(fields, f)
		}
	}
	done, err := c.gate.Done(ctx, fields)
	if err != nil {
		return fmt.Errorf("read dead-letter marks: %w", err)
	}
	var out []kafka.Message
	marks := map[string]int64{}
	for _, p := range bad {
		f := field(p.Msg.Topic, p.Msg.Partition)
		if d, ok := done[f]; ok && p.Msg.Offset <= d {
			continue
		}
		m := p.Msg
		out = append(out, kafka.Message{Key: m.Key, Value: m.Value, Headers: []kafka.Header{
			{Key: "error", Value: []byte(p.Reason)},
			{Key: "source-topic", Value: []byte(m.Topic)},
			{Key: "source-partition", Value: []byte(strconv.Itoa(m.Partition))},
			{Key: "source-offset", Value: []byte(strconv.FormatInt(m.Offset, 10))},
		}})
		marks[f] = max(marks[f], m.Offset)
		c.log.Warn("poison record dead-lettered", zap.String("topic", m.Topic), zap.Int("partition", m.Partition),
			zap.Int64("offset", m.Offset), zap.String("reason", p.Reason))
	}
	if len(out) == 0 {
		return nil
	}
	if err := c.dlq.WriteMessages(ctx, out...); err != nil {
		return fmt.Errorf("write %d records to dead-letter topic %s: %w", len(out), c.opts.DLQTopic, err)
	}
	for _, m := range out {
		c.metrics.DeadLettered.WithLabelValues(string(headerValue(m, "source-topic"))).Inc()
	}
	return c.retry(ctx, "dead-letter mark", func(ctx context.Context) error { return c.gate.Mark(ctx, marks) })
}

func headerValue(m kafka.Message, key string) []byte {
	for _, h := range m.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}
