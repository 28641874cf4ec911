package records

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/kafkaconn"
)

// Headers of a dead-letter record: why it is poison and where it came from.
const (
	headerError     = "error"
	headerTopic     = "source-topic"
	headerPartition = "source-partition"
	headerOffset    = "source-offset"
)

// DeadLetter is the dead-letter record of p: the same key and value, with
// headers naming the reason and the origin.
func DeadLetter(p Poison) kafka.Message {
	m := p.Msg
	return kafka.Message{Key: m.Key, Value: m.Value, Headers: []kafka.Header{
		{Key: headerError, Value: []byte(p.Reason)},
		{Key: headerTopic, Value: []byte(m.Topic)},
		{Key: headerPartition, Value: []byte(strconv.Itoa(m.Partition))},
		{Key: headerOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
	}}
}

// sourceOf reads the origin from a dead-letter record's headers; ok is false
// when they do not name one.
func sourceOf(m kafka.Message) (topic string, partition int, offset int64, ok bool) {
	var part, off string
	for _, h := range m.Headers {
		switch h.Key {
		case headerTopic:
			topic = string(h.Value)
		case headerPartition:
			part = string(h.Value)
		case headerOffset:
			off = string(h.Value)
		}
	}
	pn, perr := strconv.Atoi(part)
	on, oerr := strconv.ParseInt(off, 10, 64)
	return topic, pn, on, topic != "" && perr == nil && oerr == nil
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

// readOrigins passes the source headers of records [from, end) of one
// partition to fn. The reader's fetches wait at most 20 ms at the end of the
// partition: closing the reader waits for the fetch in flight (with 250 ms,
// reading four partitions of a few thousand dead letters took 0.8 s).
func readOrigins(ctx context.Context, conn *kafkaconn.Conn, topic string, partition int, from, end int64, fn func(string, int, int64)) error {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: conn.Brokers(), Dialer: conn.Dialer(), Topic: topic, Partition: partition,
		MaxBytes: 10 << 20, MaxWait: 20 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return err
	}
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return err
		}
		if t, p, o, ok := sourceOf(m); ok {
			fn(t, p, o)
		}
		if m.Offset >= end-1 {
			return nil
		}
	}
}
