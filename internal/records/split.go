package records

import (
	"github.com/segmentio/kafka-go"

	"projector/internal/fetch"
	"projector/internal/offsets"
	"projector/pkg/events"
)

// Poison is a record that is not a valid event, and why.
type Poison struct {
	Msg    kafka.Message
	Reason string
}

// Split decodes a batch: valid events become records, the rest poison;
// ranges cover every record of each partition, in the order the partitions
// first appear. A placeholder of skipped offsets (fetch.SkippedOf:
// transaction markers and records of aborted transactions) counts in its
// partition's range only, with all the offsets it stands for, so the
// watermarks and commits move past them.
func Split(msgs []kafka.Message, maxBytes int) ([]offsets.Record, []Poison, []offsets.Range) {
	recs := make([]offsets.Record, 0, len(msgs))
	var bad []Poison
	idx := map[offsets.TopicPartition]int{}
	var ranges []offsets.Range
	for _, m := range msgs {
		tp := Of(m)
		first, skipped := fetch.SkippedOf(m)
		if !skipped {
			first = m.Offset
		}
		if j, ok := idx[tp]; ok {
			ranges[j].First = min(ranges[j].First, first)
			ranges[j].Last = max(ranges[j].Last, m.Offset)
		} else {
			idx[tp] = len(ranges)
			ranges = append(ranges, offsets.Range{Topic: m.Topic, Partition: m.Partition, First: first, Last: m.Offset})
		}
		if skipped {
			continue
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
		recs = append(recs, offsets.Record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Event: ev})
	}
	return recs, bad, ranges
}

// AddHighest keeps in last, for each partition of msgs, its message of the
// highest offset seen so far (a placeholder of skipped offsets included:
// committing it commits past them).
func AddHighest(last map[offsets.TopicPartition]kafka.Message, msgs []kafka.Message) {
	for _, m := range msgs {
		tp := Of(m)
		if l, ok := last[tp]; !ok || m.Offset > l.Offset {
			last[tp] = m
		}
	}
}
