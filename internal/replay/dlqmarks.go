package replay

import (
	"context"

	"projector/internal/config"
	"projector/internal/kafkaconn"
	"projector/internal/offsets"
	"projector/internal/records"
)

// rebuildDLQMarks reads the dead-letter topic and records, per source
// partition, the highest offset already dead-lettered (px:dlq:{g}), so a
// batch that consumers retry after the handover is not dead-lettered again.
// It returns how many dead letters it read.
func rebuildDLQMarks(ctx context.Context, cfg config.Config, marks *records.DLQMarks) (int, error) {
	conn, err := kafkaconn.New(cfg.Kafka)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	highest := map[string]int64{}
	n := 0
	err = records.ReadDeadLetters(ctx, conn, cfg.Kafka.DLQTopic, 0, func(topic string, partition int, offset int64) {
		n++
		f := offsets.TopicPartition{Topic: topic, Partition: partition}.String()
		if o, ok := highest[f]; !ok || offset > o {
			highest[f] = offset
		}
	})
	if err != nil || len(highest) == 0 {
		return n, err
	}
	return n, marks.Mark(ctx, highest)
}
