// Package offsets names places in the Kafka log without a Kafka client: a
// topic's partition, a span of offsets, a record's origin, and a valid event
// with its place. The appliers take their input in these terms; reading the
// log (internal/records, internal/fetch) produces them.
package offsets

import (
	"fmt"
	"strconv"
	"strings"

	"projector/pkg/events"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int
}

// String is "<topic>:<partition>", the form partitions take in Redis hash
// fields (watermarks, dead-letter marks and claims).
func (tp TopicPartition) String() string { return tp.Topic + ":" + strconv.Itoa(tp.Partition) }

// ParseTopicPartition parses the form String gives (Kafka's topic names
// hold no ':').
func ParseTopicPartition(s string) (TopicPartition, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 1 {
		return TopicPartition{}, fmt.Errorf("partition %q: want <topic>:<partition>", s)
	}
	p, err := strconv.Atoi(s[i+1:])
	if err != nil || p < 0 {
		return TopicPartition{}, fmt.Errorf("partition %q: want <topic>:<partition>", s)
	}
	return TopicPartition{Topic: s[:i], Partition: p}, nil
}

// Origin is "<topic>:<partition>:<offset>": where a record came from, as the
// apply script's duplicate markers and the dead-letter lookup name it.
func Origin(topic string, partition int, offset int64) string {
	var b [96]byte
	o := append(b[:0], topic...)
	o = append(o, ':')
	o = strconv.AppendInt(o, int64(partition), 10)
	o = append(o, ':')
	return string(strconv.AppendInt(o, offset, 10))
}

// Record is one valid event and where it came from.
type Record struct {
	Topic     string
	Partition int
	Offset    int64
	Event     events.Event
}

// TP returns the partition r came from.
func (r Record) TP() TopicPartition { return TopicPartition{Topic: r.Topic, Partition: r.Partition} }

// Range is the span of offsets of one partition that a batch covers (valid and
// poison records alike). Its global watermark moves to Last when the batch is applied.
type Range struct {
	Topic     string
	Partition int
	First     int64
	Last      int64
}

// TP returns the partition r covers.
func (r Range) TP() TopicPartition { return TopicPartition{Topic: r.Topic, Partition: r.Partition} }
