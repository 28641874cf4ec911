// Package records holds what the consumer and the replayer share about Kafka
// records: a message's partition, splitting a batch into events (with their
// places, internal/offsets), poison records and offset ranges, the
// dead-letter record format and its bookkeeping in Redis, the fetch size and
// the name a process goes by.
package records

import (
	"github.com/segmentio/kafka-go"

	"projector/internal/offsets"
)

// Of returns the partition m came from.
func Of(m kafka.Message) offsets.TopicPartition {
	return offsets.TopicPartition{Topic: m.Topic, Partition: m.Partition}
}

// MaxBytes is the most one fetch may return: room for two records of
// maxRecordBytes (kafka.max_record_bytes) and at least 10 MiB.
func MaxBytes(maxRecordBytes int) int { return max(10<<20, 2*maxRecordBytes+(1<<20)) }
