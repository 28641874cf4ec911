package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/fetch"
	"projector/internal/kafkaconn"
	"projector/internal/offsets"
	"projector/internal/records"
)

// Committer commits offsets: the group member (*fetch.Group).
type Committer interface {
	CommitMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Reader is the group member of one session: a *fetch.Group, which reads
// committed records only and delivers a placeholder for the offsets it
// skips (transaction markers, records of aborted transactions; see
// internal/fetch).
type Reader interface {
	FetchMessage(ctx context.Context) (kafka.Message, error)
	Committer
	// Generation numbers the group generation joined last: the partitions
	// it assigned may have had other owners before it.
	Generation() int64
	Close() error
}

// Writer writes to the dead-letter topic: a *kafka.Writer.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
	Close() error
}

// Kafka is the consumer's access to the brokers; NewKafka builds the real one.
type Kafka struct {
	// Reader builds the group member of one session, fetching topics.
	Reader func(topics []string) Reader
	// DeadLetters writes to the dead-letter topic.
	DeadLetters Writer
	// Committed reads the group's committed offset of every partition of
	// its topics that has one.
	Committed func(ctx context.Context) (map[offsets.TopicPartition]int64, error)
	// DeadLettered returns the origins (offsets.Origin) of the newest
	// records of the dead-letter topic.
	DeadLettered func(ctx context.Context) (map[string]bool, error)
}

// lookBack is how many of the newest records of each dead-letter partition
// DeadLettered reads.
const lookBack = 5000

// NewKafka builds the kafka-go reader, writer and clients of opts.Kafka
// (with New's defaults applied to opts).
func NewKafka(opts Options, log *zap.Logger) Kafka {
	opts = opts.withDefaults()
	return Kafka{
		Reader:      func(topics []string) Reader { return newReader(opts, topics, log) },
		DeadLetters: newDeadLetterWriter(opts),
		Committed: func(ctx context.Context) (map[offsets.TopicPartition]int64, error) {
			return committedOffsets(ctx, opts.Kafka, opts.GroupID, opts.Topics)
		},
		DeadLettered: func(ctx context.Context) (map[string]bool, error) {
			present := map[string]bool{}
			err := records.ReadDeadLetters(ctx, opts.Kafka, opts.DLQTopic, lookBack, func(topic string, partition int, offset int64) {
				present[offsets.Origin(topic, partition, offset)] = true
			})
			return present, err
		},
	}
}

// newReader builds the group member that fetches topics.
func newReader(opts Options, topics []string, log *zap.Logger) *fetch.Group {
	gc := records.GroupReader(opts.Kafka, opts.GroupID, topics, opts.MaxRecordBytes, opts.MaxEvents)
	gc.Logger = kafka.LoggerFunc(log.Sugar().Named("kafka").Debugf)
	gc.ErrorLogger = kafka.LoggerFunc(log.Sugar().Named("kafka").Warnf)
	return fetch.NewGroup(gc)
}

// newDeadLetterWriter builds the writer of the dead-letter topic.
func newDeadLetterWriter(opts Options) *kafka.Writer {
	return &kafka.Writer{
		Addr:                   kafka.TCP(opts.Brokers...),
		Transport:              opts.Kafka.Transport(),
		Topic:                  opts.DLQTopic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchTimeout:           time.Millisecond,
		BatchBytes:             int64(records.MaxBytes(opts.MaxRecordBytes)),
		AllowAutoTopicCreation: true,
		// No retries inside kafka-go: a write whose acknowledgement was lost
		// would be written again unseen. deadLetter retries, after looking
		// for the records in the topic.
		MaxAttempts: 1,
	}
}

// committedOffsets reads group's committed offset of every partition of topics that has one.
func committedOffsets(ctx context.Context, conn *kafkaconn.Conn, group string, topics []string) (map[offsets.TopicPartition]int64, error) {
	client := conn.Client(10 * time.Second)
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("read topic metadata: %w", err)
	}
	parts := map[string][]int{}
	for _, t := range meta.Topics {
		for _, p := range t.Partitions {
			parts[t.Name] = append(parts[t.Name], p.ID)
		}
	}
	res, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return nil, fmt.Errorf("read committed offsets of group %s: %w", group, err)
	}
	if errors.Is(res.Error, kafka.GroupIdNotFound) {
		// A group that never had a member (kfake says so; Apache Kafka
		// answers with no offsets) committed nothing. The consumer joins
		// only after its first meta check, so a first start meets this.
		return map[offsets.TopicPartition]int64{}, nil
	}
	if res.Error != nil {
		return nil, fmt.Errorf("read committed offsets of group %s: %w", group, res.Error)
	}
	out := map[offsets.TopicPartition]int64{}
	for topic, ps := range res.Topics {
		for _, p := range ps {
			if p.Error == nil && p.CommittedOffset >= 0 {
				out[offsets.TopicPartition{Topic: topic, Partition: p.Partition}] = p.CommittedOffset
			}
		}
	}
	return out, nil
}
