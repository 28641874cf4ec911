// Package kafkalag measures a consumer group's lag: per partition, the end
// offset minus the committed offset. The end is the partition's last stable
// offset (ListOffsets with isolation level read_committed): the end of what
// projector's read_committed consumers can read, which is the high
// watermark unless a transaction is open. Consumers commit past
// transaction markers and records of aborted transactions (internal/fetch),
// so a consumer that applied everything has lag 0, also when the log ends
// with a marker. The consumer's lag metric, the dashboard and the benchmark
// all read it here.
package kafkalag

import (
	"context"
	"fmt"
	"sort"

	"github.com/segmentio/kafka-go"
)

// Partition is the lag of one partition.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	End       int64  `json:"end"`       // the last stable offset
	Committed int64  `json:"committed"` // -1: nothing committed yet
	// Lag is End minus Committed, or minus the earliest retained offset when
	// nothing is committed (a group starts there).
	Lag int64 `json:"lag"`
}

// Measure returns the lag of group on every partition of topics, sorted by
// topic and partition.
func Measure(ctx context.Context, client *kafka.Client, group string, topics []string) ([]Partition, error) {
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("kafka metadata: %w", err)
	}
	parts := map[string][]int{}
	offReq := map[string][]kafka.OffsetRequest{}
	for _, t := range meta.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("kafka metadata of %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			parts[t.Name] = append(parts[t.Name], p.ID)
			offReq[t.Name] = append(offReq[t.Name], kafka.LastOffsetOf(p.ID), kafka.FirstOffsetOf(p.ID))
		}
	}
	committed, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return nil, fmt.Errorf("kafka offset fetch for group %s: %w", group, err)
	}
	ends, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: offReq, IsolationLevel: kafka.ReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("kafka list offsets: %w", err)
	}
	out := []Partition{}
	for topic, ps := range ends.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("kafka list offsets of %s/%d: %w", topic, p.Partition, p.Error)
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
			out = append(out, Partition{Topic: topic, Partition: p.Partition, End: p.LastOffset, Committed: c, Lag: max(p.LastOffset-from, 0)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return out, nil
}

// Total is the sum of the partitions' lag.
func Total(ps []Partition) int64 {
	var n int64
	for _, p := range ps {
		n += p.Lag
	}
	return n
}
