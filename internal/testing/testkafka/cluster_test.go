package testkafka

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func TestClusterSurvivesKilledBroker(t *testing.T) {
	c := StartCluster(t, 3)
	if len(c.Brokers()) != 3 || len(c.Addrs()) != 3 {
		t.Fatalf("Brokers() %d, Addrs() %v; want 3 each", len(c.Brokers()), c.Addrs())
	}
	client := newClient(t, c.Addrs())
	if got := brokerConfig(t, client, 2, "min.insync.replicas"); got != "2" {
		t.Fatalf("min.insync.replicas = %q, want 2", got)
	}

	const topic, partitions = "replicated", 3
	c.CreateTopic(t, topic, partitions, 3)
	parts := readPartitions(t, c.Addrs()[0], topic)
	for _, p := range parts {
		if len(p.Replicas) != 3 || len(p.Isr) != 3 {
			t.Fatalf("partition %d: %d replicas, %d in sync; want 3 and 3", p.ID, len(p.Replicas), len(p.Isr))
		}
	}
	produce(t, c.Addrs(), topic, keyedMessages(0, 300))

	// Kill the leader of partition 0, so a partition really fails over.
	victim := c.Brokers()[parts[0].Leader.ID-1]
	victim.Kill()
	if victim.Running() {
		t.Fatalf("%s still running after Kill", victim)
	}
	for _, b := range c.Brokers() {
		if b != victim && !b.Running() {
			t.Fatalf("%s stopped when %s was killed", b, victim)
		}
	}
	// acks=all still succeeds with 2 of 3 replicas (min.insync.replicas 2).
	produce(t, c.Addrs(), topic, keyedMessages(300, 300))

	// Counted on the survivors; retries may have written a record twice.
	total := sum(endOffsets(t, newClient(t, runningAddrs(c.Brokers())), topic, partitions))
	if total < 600 {
		t.Fatalf("topic holds %d records after the kill, want at least 600", total)
	}
	got := consume(t, c.Addrs(), topic, "g-cluster", int(total))
	seen := map[int]bool{}
	for _, m := range got {
		seen[valueNumber(t, m)] = true
	}
	for v := 0; v < 600; v++ {
		if !seen[v] {
			t.Fatalf("value v-%d produced but not consumed (%d distinct of 600)", v, len(seen))
		}
	}

	victim.Restart(t)
	c.WaitInSync(t, topic)
	if p := readPartitions(t, victim.Addr(), topic); len(p) != partitions {
		t.Fatalf("restarted %s reports %d partitions of %s, want %d", victim, len(p), topic, partitions)
	}

	c.Stop()
	for _, b := range c.Brokers() {
		if b.Running() {
			t.Fatalf("%s still running after Cluster.Stop", b)
		}
	}
}

// readPartitions returns the topic's partitions as the broker at addr sees
// them, indexed by partition id; each must have a leader.
func readPartitions(t *testing.T, addr, topic string) []kafka.Partition {
	t.Helper()
	conn, err := (&kafka.Dialer{Timeout: 5 * time.Second}).Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("set deadline: %v", err)
	}
	ps, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatalf("metadata of %s from %s: %v", topic, addr, err)
	}
	out := make([]kafka.Partition, len(ps))
	for _, p := range ps {
		if p.ID < 0 || p.ID >= len(ps) {
			t.Fatalf("partition id %d of %d", p.ID, len(ps))
		}
		if p.Leader.Host == "" {
			t.Fatalf("partition %d of %s has no leader", p.ID, topic)
		}
		out[p.ID] = p
	}
	return out
}
