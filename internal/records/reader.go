package records

import (
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/fetch"
	"projector/internal/kafkaconn"
)

// GroupReader is the consumer group member's configuration
// (fetch.NewGroup): read_committed, offsets committed explicitly, a group
// without offsets starts at the earliest one, fetches of up to fetchBytes
// that wait up to 250 ms for a record and, while records flow, are sent
// fetchPace apart, a queue that holds a batch of maxEvents, and a
// session of 10 s. Its Transport is its own (the Group closes it). The
// consumer and the benchmark's peer read with it alike.
func GroupReader(conn *kafkaconn.Conn, group string, topics []string, maxRecordBytes, maxEvents int) fetch.GroupConfig {
	fetchOpts := PartitionReader(conn, conn.FetchTransport(topics), maxRecordBytes, 250*time.Millisecond)
	fetchOpts.Pace = fetchPace
	return fetch.GroupConfig{
		Brokers:           conn.Brokers(),
		Dialer:            conn.Dialer(),
		GroupID:           group,
		Topics:            topics,
		Fetch:             fetchOpts,
		QueueCapacity:     max(1000, maxEvents),
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
	}
}

// fetchBytes bounds what one fetch of a partition returns. A partition
// reader holds one answer decoded at a time, so a process holds about this
// much per partition it reads (a consumer of 12 partitions: a dozen MiB):
// 10 MiB answers kept 200 MiB and more live, and the soft memory limit
// made the garbage collector take half of the consumer's CPU. The broker
// returns a record batch larger than this whole (KIP-74), so records up to
// kafka.max_record_bytes still come through.
const fetchBytes = 1 << 20

// fetchPace is the least time between a group member's fetch requests while
// records flow (fetch.Options.Pace): a request for each produce request cost
// the broker more CPU than the Java consumer's fetches (BENCHMARKS.md, the
// Kafka broker's share). 10 ms is the default batch.max_wait, which a batch
// waits for anyway.
const fetchPace = 10 * time.Millisecond

// PartitionReader is the configuration of read_committed partition readers
// (fetch.NewReader) through transport (conn.FetchTransport): fetches of up
// to fetchBytes that wait up to maxWait for records, retried with backoff
// from 50 to 500 ms. maxRecordBytes is kafka.max_record_bytes (larger
// records are poison, whatever the fetch size).
func PartitionReader(conn *kafkaconn.Conn, transport kafka.RoundTripper, maxRecordBytes int, maxWait time.Duration) fetch.Options {
	return fetch.Options{
		Addr:       kafka.TCP(conn.Brokers()...),
		Transport:  transport,
		MinBytes:   1,
		MaxBytes:   min(fetchBytes, MaxBytes(maxRecordBytes)),
		MaxWait:    maxWait,
		BackoffMin: 50 * time.Millisecond,
		BackoffMax: 500 * time.Millisecond,
	}
}
