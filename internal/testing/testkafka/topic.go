package testkafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// topicTimeout bounds creating a topic and waiting for its metadata.
const topicTimeout = 60 * time.Second

// createTopic creates a topic through the running members of brokers and
// waits until each of them reports a leader for every partition and, for a
// replicated topic, every replica in sync.
func createTopic(brokers []*Broker, name string, partitions, replication int) error {
	if partitions < 1 || replication < 1 {
		return fmt.Errorf("create topic %q: partitions (%d) and replication (%d) must be at least 1", name, partitions, replication)
	}
	client, addrs, closeClient, err := adminClient(brokers, fmt.Sprintf("create topic %q", name))
	if err != nil {
		return err
	}
	defer closeClient()
	ctx, cancel := context.WithTimeout(context.Background(), topicTimeout)
	defer cancel()
	req := &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: name, NumPartitions: partitions, ReplicationFactor: replication,
	}}}
	for attempt := 1; ; attempt++ {
		resp, err := client.CreateTopics(ctx, req)
		if err == nil {
			topicErr := resp.Errors[name]
			// A retried request may find the topic its predecessor created.
			if topicErr != nil && !(attempt > 1 && errors.Is(topicErr, kafka.TopicAlreadyExists)) {
				return fmt.Errorf("create topic %q (%d partitions, replication %d) via %v: %w", name, partitions, replication, addrs, topicErr)
			}
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("create topic %q via %v: %w", name, addrs, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := waitTopic(ctx, addrs, name, partitions, replication); err != nil {
		return fmt.Errorf("topic %q created but not ready after %s: %w", name, topicTimeout, err)
	}
	return nil
}

// adminClient returns a Client of the running members of brokers with a
// Transport of its own (no stale metadata from earlier requests), their
// addresses, and a function that closes the Transport's connections; what
// names the operation in the error when no broker runs.
func adminClient(brokers []*Broker, what string) (*kafka.Client, []string, func(), error) {
	addrs := runningAddrs(brokers)
	if len(addrs) == 0 {
		return nil, nil, nil, fmt.Errorf("%s: no broker is running", what)
	}
	transport := &kafka.Transport{DialTimeout: 5 * time.Second}
	client := &kafka.Client{Addr: kafka.TCP(addrs...), Timeout: 10 * time.Second, Transport: transport}
	return client, addrs, transport.CloseIdleConnections, nil
}

// runningAddrs returns the addresses of the running brokers.
func runningAddrs(brokers []*Broker) []string {
	var addrs []string
	for _, b := range brokers {
		if b.Running() {
			addrs = append(addrs, b.Addr())
		}
	}
	return addrs
}

// waitTopic polls the metadata of every address until the topic has
// partitions partitions (0: any number), each with a leader and at least
// inSync in-sync replicas (0: all its replicas).
func waitTopic(ctx context.Context, addrs []string, name string, partitions, inSync int) error {
	for {
		var err error
		for _, addr := range addrs {
			if err = topicReady(ctx, addr, name, partitions, inSync); err != nil {
				break
			}
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// topicReady asks the broker at addr for the topic's metadata and returns
// nil when it satisfies waitTopic's condition.
func topicReady(ctx context.Context, addr, name string, partitions, inSync int) error {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := kafka.DialContext(dctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return fmt.Errorf("set deadline on %s: %w", addr, err)
	}
	parts, err := conn.ReadPartitions(name)
	if err != nil {
		return fmt.Errorf("metadata of %q from %s: %w", name, addr, err)
	}
	if len(parts) == 0 || (partitions > 0 && len(parts) != partitions) {
		return fmt.Errorf("%s reports %d partitions of %q, want %d", addr, len(parts), name, partitions)
	}
	for _, p := range parts {
		if p.Leader.Host == "" {
			return fmt.Errorf("%s: partition %d of %q has no leader", addr, p.ID, name)
		}
		want := inSync
		if want == 0 {
			want = len(p.Replicas)
		}
		if len(p.Isr) < want {
			return fmt.Errorf("%s: partition %d of %q has %d in-sync replicas, want %d", addr, p.ID, name, len(p.Isr), want)
		}
	}
	return nil
}

// addPartitions raises a topic's partition count through the running
// members of brokers and waits for the new partitions' metadata.
func addPartitions(brokers []*Broker, name string, total int) error {
	client, addrs, closeClient, err := adminClient(brokers, fmt.Sprintf("add partitions to %q", name))
	if err != nil {
		return err
	}
	defer closeClient()
	ctx, cancel := context.WithTimeout(context.Background(), topicTimeout)
	defer cancel()
	resp, err := client.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{
		Topics: []kafka.TopicPartitionsConfig{{Name: name, Count: int32(total)}},
	})
	if err != nil {
		return fmt.Errorf("add partitions to %q (%d in all) via %v: %w", name, total, addrs, err)
	}
	if err := resp.Errors[name]; err != nil {
		return fmt.Errorf("add partitions to %q (%d in all) via %v: %w", name, total, addrs, err)
	}
	if err := waitTopic(ctx, addrs, name, total, 0); err != nil {
		return fmt.Errorf("partitions of %q added but not ready after %s: %w", name, topicTimeout, err)
	}
	return nil
}
