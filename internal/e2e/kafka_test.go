package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// waitCaughtUp waits until the group's committed offsets reach the end of
// every partition of topics; it returns an error after timeout.
func waitCaughtUp(brokers []string, group string, topics []string, timeout time.Duration) error {
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		lag, err := groupLag(context.Background(), client, group, topics)
		if err == nil && lag == 0 {
			return nil
		}
		last = fmt.Sprintf("lag %d, err %v", lag, err)
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("group %s did not catch up within %v: %s", group, timeout, last)
}

// groupLag is the sum over partitions of end offset minus committed offset.
func groupLag(ctx context.Context, client *kafka.Client, group string, topics []string) (int64, error) {
	ends, parts, err := endOffsets(ctx, client, topics)
	if err != nil {
		return 0, err
	}
	committed, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return 0, err
	}
	var lag int64
	detail := ""
	for key, end := range ends {
		c := int64(0)
		for topic, ps := range committed.Topics {
			for _, p := range ps {
				if topic+":"+strconv.Itoa(p.Partition) == key && p.CommittedOffset > 0 {
					c = p.CommittedOffset
				}
			}
		}
		lag += end - c
		if end != c {
			detail += fmt.Sprintf(" %s=%d/%d", key, c, end)
		}
	}
	if lag != 0 {
		return lag, fmt.Errorf("behind:%s", detail)
	}
	return lag, nil
}

// endOffsets returns the end offset of every partition ("topic:partition").
func endOffsets(ctx context.Context, client *kafka.Client, topics []string) (map[string]int64, map[string][]int, error) {
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, nil, err
	}
	parts := map[string][]int{}
	req := map[string][]kafka.OffsetRequest{}
	for _, tp := range meta.Topics {
		for _, p := range tp.Partitions {
			parts[tp.Name] = append(parts[tp.Name], p.ID)
			req[tp.Name] = append(req[tp.Name], kafka.LastOffsetOf(p.ID))
		}
	}
	res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: req})
	if err != nil {
		return nil, nil, err
	}
	ends := map[string]int64{}
	for topic, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, nil, p.Error
			}
			ends[topic+":"+strconv.Itoa(p.Partition)] = p.LastOffset
		}
	}
	return ends, parts, nil
}

// record is a stored Kafka record with its origin.
type record struct {
	Topic     string
	Partition int
	Offset    int64
	Key       string
	Value     string
	Headers   map[string]string
}

// readAll reads every record of the topics, from the first offset to the end.
func readAll(t *testing.T, brokers []string, topics []string) []record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	ends, _, err := endOffsets(ctx, client, topics)
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	var out []record
	for key, end := range ends {
		if end == 0 {
			continue
		}
		var topic string
		var part int
		for i := len(key) - 1; i >= 0; i-- {
			if key[i] == ':' {
				topic = key[:i]
				part, _ = strconv.Atoi(key[i+1:])
				break
			}
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: part, MaxWait: 100 * time.Millisecond, MaxBytes: 10 << 20})
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read %s: %v", key, err)
			}
			h := map[string]string{}
			for _, hd := range m.Headers {
				h[hd.Key] = string(hd.Value)
			}
			out = append(out, record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value), Headers: h})
			if m.Offset >= end-1 {
				break
			}
		}
		r.Close()
	}
	return out
}
