package records

import (
	"time"

	"github.com/segmentio/kafka-go"
)

// GroupReader is the consumer group member's reader configuration: offsets
// committed explicitly (CommitInterval 0), a group without offsets starts
// at the earliest one, fetches of up to MaxBytes, a queue that holds a
// batch of maxEvents, and a session of 10 s. The consumer and the
// benchmark's peer read with it alike.
func GroupReader(brokers []string, dialer *kafka.Dialer, group string, topics []string, maxRecordBytes, maxEvents int) kafka.ReaderConfig {
	return kafka.ReaderConfig{
		Brokers:           brokers,
		Dialer:            dialer,
		GroupID:           group,
		GroupTopics:       topics,
		MinBytes:          1,
		MaxBytes:          MaxBytes(maxRecordBytes),
		MaxWait:           250 * time.Millisecond,
		QueueCapacity:     max(1000, maxEvents),
		CommitInterval:    0,
		StartOffset:       kafka.FirstOffset,
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		ReadBackoffMin:    50 * time.Millisecond,
		ReadBackoffMax:    500 * time.Millisecond,
	}
}
