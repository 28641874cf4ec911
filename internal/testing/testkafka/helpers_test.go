package testkafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// ioTimeout bounds one produce or consume phase of a test.
const ioTimeout = 90 * time.Second

// keyedMessages returns n messages with values "v-<first+i>" and keys
// "user-<(first+i) % 50>": 50 keys, several messages per key.
func keyedMessages(first, n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		v := first + i
		msgs[i] = kafka.Message{
			Key:   []byte("user-" + strconv.Itoa(v%50)),
			Value: []byte("v-" + strconv.Itoa(v)),
		}
	}
	return msgs
}

// valueNumber parses "v-<n>".
func valueNumber(t *testing.T, m kafka.Message) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(string(m.Value), "v-"))
	if err != nil {
		t.Fatalf("unexpected value %q at %s/%d@%d", m.Value, m.Topic, m.Partition, m.Offset)
	}
	return n
}

// produce writes msgs with acks=all, hashing keys to partitions. kafka-go
// retries failed batches itself but returns a metadata error (for example
// from a broker that just died) at once; then nothing was written, and
// produce writes again what is not yet acknowledged, until ioTimeout.
func produce(t *testing.T, addrs []string, topic string, msgs []kafka.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	transport := &kafka.Transport{DialTimeout: 2 * time.Second, MetadataTTL: time.Second}
	defer transport.CloseIdleConnections()
	w := &kafka.Writer{
		Addr:            kafka.TCP(addrs...),
		Topic:           topic,
		Balancer:        &kafka.Hash{},
		RequiredAcks:    kafka.RequireAll,
		BatchSize:       100,
		BatchTimeout:    5 * time.Millisecond,
		MaxAttempts:     20,
		WriteBackoffMin: 100 * time.Millisecond,
		WriteBackoffMax: time.Second,
		Transport:       transport,
	}
	defer w.Close()
	pending := msgs
	for len(pending) > 0 {
		err := w.WriteMessages(ctx, pending...)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("produce %d messages to %s via %v: %v", len(pending), topic, addrs, err)
		}
		var werrs kafka.WriteErrors
		if errors.As(err, &werrs) {
			var failed []kafka.Message
			for i, e := range werrs {
				if e != nil {
					failed = append(failed, pending[i])
				}
			}
			pending = failed
		}
		t.Logf("produce: %d messages to write again after: %v", len(pending), err)
		time.Sleep(200 * time.Millisecond)
	}
}

// commitEvery is how many messages consume reads between two commits.
const commitEvery = 100

// consume reads n messages of topic as member of group and commits them in
// batches of commitEvery (CommitInterval 0: each commit is synchronous), as
// a consumer commits after processing a batch; then it leaves the group.
func consume(t *testing.T, addrs []string, topic, group string, n int) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           addrs,
		GroupID:           group,
		Topic:             topic,
		MinBytes:          1,
		MaxBytes:          1 << 20,
		MaxWait:           200 * time.Millisecond,
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		ReadBackoffMax:    500 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
	})
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("close reader of group %s: %v", group, err)
		}
	}()
	var got, uncommitted []kafka.Message
	for len(got) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("group %s: fetch from %s after %d of %d messages: %v", group, topic, len(got), n, err)
		}
		got = append(got, m)
		uncommitted = append(uncommitted, m)
		if len(uncommitted) == commitEvery || len(got) == n {
			if err := r.CommitMessages(ctx, uncommitted...); err != nil {
				t.Fatalf("group %s: commit %d messages: %v", group, len(uncommitted), err)
			}
			uncommitted = uncommitted[:0]
		}
	}
	return got
}

// retry calls f until it returns nil or ioTimeout passes, then fails t with
// what.
func retry(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	for {
		err := f(ctx)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// newClient returns a kafka-go client for addrs whose connections are closed
// at the end of the test.
func newClient(t *testing.T, addrs []string) *kafka.Client {
	transport := &kafka.Transport{DialTimeout: 2 * time.Second, MetadataTTL: time.Second}
	t.Cleanup(transport.CloseIdleConnections)
	return &kafka.Client{Addr: kafka.TCP(addrs...), Timeout: 10 * time.Second, Transport: transport}
}

// partitionList returns 0..n-1.
func partitionList(n int) []int {
	ps := make([]int, n)
	for i := range ps {
		ps[i] = i
	}
	return ps
}

// committedOffsets returns the group's committed offset per partition of
// topic, retrying while the coordinator is unavailable or loading.
func committedOffsets(t *testing.T, client *kafka.Client, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	var offs map[int]int64
	retry(t, "fetch committed offsets of group "+group, func(ctx context.Context) error {
		resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{
			GroupID: group,
			Topics:  map[string][]int{topic: partitionList(partitions)},
		})
		if err != nil {
			return err
		}
		if resp.Error != nil {
			return resp.Error
		}
		offs = map[int]int64{}
		for _, p := range resp.Topics[topic] {
			if p.Error != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, p.Error)
			}
			offs[p.Partition] = p.CommittedOffset
		}
		if len(offs) != partitions {
			return fmt.Errorf("offsets for %d partitions, want %d", len(offs), partitions)
		}
		return nil
	})
	return offs
}

// endOffsets returns the end offset of every partition of topic.
func endOffsets(t *testing.T, client *kafka.Client, topic string, partitions int) map[int]int64 {
	t.Helper()
	var offs map[int]int64
	retry(t, "list end offsets of "+topic, func(ctx context.Context) error {
		reqs := make([]kafka.OffsetRequest, partitions)
		for i := range reqs {
			reqs[i] = kafka.LastOffsetOf(i)
		}
		resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
		if err != nil {
			return err
		}
		offs = map[int]int64{}
		for _, p := range resp.Topics[topic] {
			if p.Error != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, p.Error)
			}
			offs[p.Partition] = p.LastOffset
		}
		if len(offs) != partitions {
			return fmt.Errorf("end offsets for %d partitions, want %d", len(offs), partitions)
		}
		return nil
	})
	return offs
}

// sum adds the values of m.
func sum(m map[int]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}

// brokerConfig returns the value of a broker's configuration key.
func brokerConfig(t *testing.T, client *kafka.Client, brokerID int, key string) string {
	t.Helper()
	var value string
	retry(t, fmt.Sprintf("describe %s of broker %d", key, brokerID), func(ctx context.Context) error {
		resp, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
			Resources: []kafka.DescribeConfigRequestResource{{
				ResourceType: kafka.ResourceTypeBroker,
				ResourceName: strconv.Itoa(brokerID),
				ConfigNames:  []string{key},
			}},
		})
		if err != nil {
			return err
		}
		for _, r := range resp.Resources {
			if r.Error != nil {
				return r.Error
			}
			for _, e := range r.ConfigEntries {
				if e.ConfigName == key {
					value = e.ConfigValue
					return nil
				}
			}
		}
		return fmt.Errorf("no entry %s in %+v", key, resp.Resources)
	})
	return value
}
