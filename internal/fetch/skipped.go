package fetch

import "github.com/segmentio/kafka-go"

// Skipped is the WriterData of a placeholder message (see the package doc):
// the offsets First up to the message's Offset hold no record for a
// read_committed reader (transaction markers, records of aborted
// transactions).
type Skipped struct {
	First int64
}

// Placeholder returns the placeholder of the skipped offsets first..last of
// topic's partition; end is the HighWaterMark.
func Placeholder(topic string, partition int, first, last, end int64) kafka.Message {
	return kafka.Message{Topic: topic, Partition: partition, Offset: last, HighWaterMark: end, WriterData: Skipped{First: first}}
}

// SkippedOf reports whether m is a placeholder of skipped offsets, and the
// first of them (its Offset is the last).
func SkippedOf(m kafka.Message) (first int64, ok bool) {
	s, ok := m.WriterData.(Skipped)
	return s.First, ok
}

// Covered is the number of offsets m stands for: 1 for a record, the run's
// length for a placeholder.
func Covered(m kafka.Message) int64 {
	if first, ok := SkippedOf(m); ok {
		return m.Offset - first + 1
	}
	return 1
}

// Clamp returns placeholder m cut to end at last (a placeholder whose run
// reaches past the end of what the caller reads), and whether anything of
// it is left (its first offset is at or before last). A record is returned
// as it is, with ok when its offset is at or before last.
func Clamp(m kafka.Message, last int64) (kafka.Message, bool) {
	first, ok := SkippedOf(m)
	if !ok {
		return m, m.Offset <= last
	}
	if first > last {
		return m, false
	}
	m.Offset = min(m.Offset, last)
	return m, true
}
