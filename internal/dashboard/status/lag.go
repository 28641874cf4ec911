package status

import (
	"context"
	"fmt"
	"sort"

	"github.com/segmentio/kafka-go"
)

// Measure returns the lag of group on topics: per partition the end offset
// minus the committed offset (the start offset when nothing is committed).
func Measure(ctx context.Context, client *kafka.Client, group string, topics []string) (Lag, error) {
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return Lag{}, fmt.Errorf("kafka metadata: %w", err)
	}
	parts := map[string][]int{}
	offReq := map[string][]kafka.OffsetRequest{}
	for _, t := range meta.Topics {
		if t.Error != nil {
			return Lag{}, fmt.Errorf("kafka metadata of %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			parts[t.Name] = append(parts[t.Name], p.ID)
			offReq[t.Name] = append(offReq[t.Name], kafka.LastOffsetOf(p.ID), kafka.FirstOffsetOf(p.ID))
		}
	}
	committed, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return Lag{}, fmt.Errorf("kafka offset fetch for group %s: %w", group, err)
	}
	ends, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: offReq})
	if err != nil {
		return Lag{}, fmt.Errorf("kafka list offsets: %w", err)
	}
	lag := Lag{Partitions: []Partition{}}
	for topic, ps := range ends.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return Lag{}, fmt.Errorf("kafka list offsets of %s/%d: %w", topic, p.Partition, p.Error)
			}
			c := int64(-1)
			for _, cp := range committed.Topics[topic] {
				if cp.Partition == p.Partition {
					c = cp.CommittedOffset
				}
			}
			from := c
			if from < 0 {
				from = p.FirstOffset
			}
			pl := Partition{Topic: topic, Partition: p.Partition, End: p.LastOffset, Committed: c, Lag: max(p.LastOffset-from, 0)}
			lag.Total += pl.Lag
			lag.Partitions = append(lag.Partitions, pl)
		}
	}
	sort.Slice(lag.Partitions, func(i, j int) bool {
		a, b := lag.Partitions[i], lag.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return lag, nil
}
