package status

import (
	"context"

	"github.com/segmentio/kafka-go"

	"projector/internal/kafkalag"
)

// Measure returns the lag of group on topics (internal/kafkalag).
func Measure(ctx context.Context, client *kafka.Client, group string, topics []string) (Lag, error) {
	ps, err := kafkalag.Measure(ctx, client, group, topics)
	if err != nil {
		return Lag{}, err
	}
	return Lag{Partitions: ps, Total: kafkalag.Total(ps)}, nil
}
