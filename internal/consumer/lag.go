package consumer

import (
	"context"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/kafkaconn"
	"projector/internal/obs"
)

// MonitorLag sets projector_consumer_lag{topic,partition} every 5 seconds to
// end offset minus the group's committed offset (kafka-go's Lag() is -1 in a group).
func MonitorLag(ctx context.Context, conn *kafkaconn.Conn, group string, topics []string, m *obs.Metrics, log *zap.Logger) {
	client := conn.Client(5 * time.Second)
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		if err := measureLag(ctx, client, group, topics, m); err != nil && ctx.Err() == nil {
			log.Debug("measure lag", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func measureLag(ctx context.Context, client *kafka.Client, group string, topics []string, m *obs.Metrics) error {
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return err
	}
	parts := map[string][]int{}
	offReq := map[string][]kafka.OffsetRequest{}
	for _, t := range meta.Topics {
		for _, p := range t.Partitions {
			parts[t.Name] = append(parts[t.Name], p.ID)
			offReq[t.Name] = append(offReq[t.Name], kafka.LastOffsetOf(p.ID), kafka.FirstOffsetOf(p.ID))
		}
	}
	committed, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return err
	}
	ends, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: offReq})
	if err != nil {
		return err
	}
	for topic, ps := range ends.Topics {
		for _, p := range ps {
			var c int64 = -1
			for _, cp := range committed.Topics[topic] {
				if cp.Partition == p.Partition {
					c = cp.CommittedOffset
				}
			}
			if c < 0 {
				c = p.FirstOffset
			}
			m.ConsumerLag.WithLabelValues(topic, strconv.Itoa(p.Partition)).Set(float64(max(p.LastOffset-c, 0)))
		}
	}
	return nil
}
