package consumer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/kafkaconn"
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
func (c *Consumer) deadLetter(ctx context.Context, bad []Poison) error {
	if len(bad) == 0 {
		return nil
	}
	var fields, parts []string
	seen := map[string]bool{}
	for _, p := range bad {
		f := field(p.Msg.Topic, p.Msg.Partition)
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
	var todo, uncertain []Poison
	for _, p := range bad {
		f := field(p.Msg.Topic, p.Msg.Partition)
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
		present, err := c.findDeadLetters(ctx)
		if err != nil {
			return kafkaFailed(c.metrics.DeadLetterErrors, fmt.Errorf("look for earlier dead letters: %w", err))
		}
		for _, p := range uncertain {
			if !present[origin(p.Msg.Topic, p.Msg.Partition, p.Msg.Offset)] {
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
		m := p.Msg
		out = append(out, kafka.Message{Key: m.Key, Value: m.Value, Headers: []kafka.Header{
			{Key: "error", Value: []byte(p.Reason)},
			{Key: "source-topic", Value: []byte(m.Topic)},
			{Key: "source-partition", Value: []byte(strconv.Itoa(m.Partition))},
			{Key: "source-offset", Value: []byte(strconv.FormatInt(m.Offset, 10))},
		}})
	}
	if err := c.dlq.WriteMessages(ctx, out...); err != nil {
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

// ownerName names a consumer in dead-letter claims: host, pid and a random suffix.
func ownerName() string {
	h, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", h, os.Getpid(), hex.EncodeToString(b))
}

// mark raises the gate's fields (prefix + "topic:partition") to the highest offset of recs.
func (c *Consumer) mark(ctx context.Context, recs []Poison, prefix string) error {
	marks := map[string]int64{}
	for _, p := range recs {
		f := prefix + field(p.Msg.Topic, p.Msg.Partition)
		marks[f] = max(marks[f], p.Msg.Offset)
	}
	return c.retry(ctx, "dead-letter mark", func(ctx context.Context) error { return c.gate.Mark(ctx, marks) })
}

func origin(topic string, partition int, offset int64) string {
	return topic + "/" + strconv.Itoa(partition) + "/" + strconv.FormatInt(offset, 10)
}

// lookBack is how many of the newest records of each dead-letter partition
// findDeadLetters reads.
const lookBack = 5000

// findDeadLetters returns the origins (topic/partition/offset) of the newest
// records of the dead-letter topic.
func (c *Consumer) findDeadLetters(ctx context.Context) (map[string]bool, error) {
	present := map[string]bool{}
	err := ReadDeadLetters(ctx, c.opts.Kafka, c.opts.DLQTopic, lookBack, func(topic string, partition int, offset int64) {
		present[origin(topic, partition, offset)] = true
	})
	return present, err
}

// ReadDeadLetters calls fn with the source topic, partition and offset of each
// of the newest lookBack records (0: all) of every partition of the
// dead-letter topic. A missing topic has no records.
func ReadDeadLetters(ctx context.Context, conn *kafkaconn.Conn, dlqTopic string, lookBack int64, fn func(topic string, partition int, offset int64)) error {
	client := conn.Client(10 * time.Second)
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{dlqTopic}})
	if err != nil {
		return fmt.Errorf("read metadata of %s: %w", dlqTopic, err)
	}
	req := map[string][]kafka.OffsetRequest{}
	for _, t := range meta.Topics {
		if t.Error != nil {
			return nil // no dead-letter topic: nothing was written
		}
		for _, p := range t.Partitions {
			req[t.Name] = append(req[t.Name], kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
		}
	}
	offs, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: req})
	if err != nil {
		return fmt.Errorf("list offsets of %s: %w", dlqTopic, err)
	}
	for topic, ps := range offs.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return fmt.Errorf("offsets of %s/%d: %w", topic, p.Partition, p.Error)
			}
			from := p.FirstOffset
			if lookBack > 0 {
				from = max(from, p.LastOffset-lookBack)
			}
			if p.LastOffset <= from {
				continue
			}
			if err := readOrigins(ctx, conn, topic, p.Partition, from, p.LastOffset, fn); err != nil {
				return fmt.Errorf("read %s/%d: %w", topic, p.Partition, err)
			}
		}
	}
	return nil
}

// readOrigins passes the source headers of records [from, end) of one partition to fn.
func readOrigins(ctx context.Context, conn *kafkaconn.Conn, topic string, partition int, from, end int64, fn func(string, int, int64)) error {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: conn.Brokers(), Dialer: conn.Dialer(), Topic: topic, Partition: partition,
		MaxBytes: 10 << 20, MaxWait: 250 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return err
	}
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return err
		}
		var t, part, off string
		for _, h := range m.Headers {
			switch h.Key {
			case "source-topic":
				t = string(h.Value)
			case "source-partition":
				part = string(h.Value)
			case "source-offset":
				off = string(h.Value)
			}
		}
		pn, perr := strconv.Atoi(part)
		on, oerr := strconv.ParseInt(off, 10, 64)
		if t != "" && perr == nil && oerr == nil {
			fn(t, pn, on)
		}
		if m.Offset >= end-1 {
			return nil
		}
	}
}
