package records

import (
	"github.com/segmentio/kafka-go"

	"projector/pkg/events"
)

// Poison is a record that is not a valid event, and why.
type Poison struct {
	Msg    kafka.Message
	Reason string
}

// Split decodes a batch: valid events become records, the rest poison;
// ranges cover every record of each partition, in the order the partitions
// first appear.
func Split(msgs []kafka.Message, maxBytes int) ([]Record, []Poison, []Range) {
	recs := make([]Record, 0, len(msgs))
	var bad []Poison
	idx := map[TopicPartition]int{}
	var ranges []Range
	for _, m := range msgs {
		tp := Of(m)
		if j, ok := idx[tp]; ok {
			ranges[j].First = min(ranges[j].First, m.Offset)
			ranges[j].Last = max(ranges[j].Last, m.Offset)
		} else {
			idx[tp] = len(ranges)
			ranges = append(ranges, Range{Topic: m.Topic, Partition: m.Partition, First: m.Offset, Last: m.Offset})
		}
		if err := events.CheckSize(len(m.Value), maxBytes); err != nil {
			bad = append(bad, Poison{m, err.Error()})
			continue
		}
		ev, err := events.Decode(m.Value)
		if err != nil {
			bad = append(bad, Poison{m, err.Error()})
			continue
		}
		recs = append(recs, Record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Event: ev})
	}
	return recs, bad, ranges
}

// Highest returns the highest offset of each partition among msgs.
func Highest(msgs []kafka.Message) map[TopicPartition]kafka.Message {
	last := map[TopicPartition]kafka.Message{}
	for _, m := range msgs {
		tp := Of(m)
		if l, ok := last[tp]; !ok || m.Offset > l.Offset {
			last[tp] = m
		}
	}
	return last
}
