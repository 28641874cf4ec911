package consumer

import (
	"context"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/kafkaconn"
	"projector/internal/kafkalag"
	"projector/internal/obs"
)

// MonitorLag sets projector_consumer_lag{topic,partition} every 5 seconds to
// the end offset (the last stable offset, see internal/kafkalag) minus the
// group's committed offset, for the topics that topics returns each time
// (Consumer.Topics: the configured topics that exist; a missing one would
// fail the whole measurement).
func MonitorLag(ctx context.Context, conn *kafkaconn.Conn, group string, topics func() []string, m *obs.Metrics, log *zap.Logger) {
	client := conn.Client(5 * time.Second)
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		// No topic means none is known to exist yet; an empty list would ask for every topic.
		if ts := topics(); len(ts) > 0 {
			if err := measureLag(ctx, client, group, ts, m); err != nil && ctx.Err() == nil {
				log.Debug("measure lag", zap.Error(err))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func measureLag(ctx context.Context, client *kafka.Client, group string, topics []string, m *obs.Metrics) error {
	ps, err := kafkalag.Measure(ctx, client, group, topics)
	if err != nil {
		return err
	}
	for _, p := range ps {
		m.ConsumerLag.WithLabelValues(p.Topic, strconv.Itoa(p.Partition)).Set(float64(p.Lag))
	}
	return nil
}
