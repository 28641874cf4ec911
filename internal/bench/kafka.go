package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// Kafka is one Apache Kafka broker started with scripts/testenv/kafka.sh.
type Kafka struct {
	script string
	dir    string
	addr   string
}

// StartKafka starts a fresh single-node broker (data under dir) through the
// kafka.sh script of the repository at repo. The broker dies with this process.
func StartKafka(ctx context.Context, repo, dir string) (*Kafka, error) {
	port, err := freePort(false)
	if err != nil {
		return nil, err
	}
	cport, err := freePort(false)
	if err != nil {
		return nil, err
	}
	k := &Kafka{script: filepath.Join(repo, "scripts/testenv/kafka.sh"), dir: filepath.Join(dir, "kafka")}
	cmd := exec.CommandContext(ctx, k.script, "start", "--port", strconv.Itoa(port), "--controller-port", strconv.Itoa(cport),
		"--data", k.dir, "--heap", "1g", "--owner-pid", strconv.Itoa(os.Getpid()),
		"--prop", "auto.create.topics.enable=false")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kafka.sh start: %w", err)
	}
	k.addr = strings.TrimSpace(string(out))
	return k, nil
}

// Addr is the bootstrap address.
func (k *Kafka) Addr() string { return k.addr }

// Stop stops the broker.
func (k *Kafka) Stop() {
	cmd := exec.Command(k.script, "stop", "--data", k.dir, "--timeout", "10")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	_ = cmd.Run()
}

// CreateTopics creates the topics with partitions partitions each and waits for their leaders.
func (k *Kafka) CreateTopics(ctx context.Context, partitions int, topics ...string) error {
	client := &kafka.Client{Addr: kafka.TCP(k.addr), Timeout: 30 * time.Second}
	req := &kafka.CreateTopicsRequest{}
	for _, t := range topics {
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: t, NumPartitions: partitions, ReplicationFactor: 1})
	}
	resp, err := client.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	for t, e := range resp.Errors {
		if e != nil {
			return fmt.Errorf("create topic %s: %w", t, e)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
		ready := err == nil && len(meta.Topics) == len(topics)
		for _, t := range meta.Topics {
			ready = ready && t.Error == nil && len(t.Partitions) == partitions
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topics %v not ready after 30s: %v", topics, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Lag returns the group's total lag over the topics (end offset minus
// committed offset, the earliest offset counting where nothing is committed).
func (k *Kafka) Lag(ctx context.Context, group string, topics []string) (int64, error) {
	client := &kafka.Client{Addr: kafka.TCP(k.addr), Timeout: 10 * time.Second}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return 0, fmt.Errorf("metadata: %w", err)
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
		return 0, fmt.Errorf("offset fetch: %w", err)
	}
	ends, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: offReq})
	if err != nil {
		return 0, fmt.Errorf("list offsets: %w", err)
	}
	var lag int64
	for topic, ps := range ends.Topics {
		for _, p := range ps {
			c := p.FirstOffset
			for _, cp := range committed.Topics[topic] {
				if cp.Partition == p.Partition && cp.CommittedOffset >= 0 {
					c = cp.CommittedOffset
				}
			}
			lag += max(p.LastOffset-c, 0)
		}
	}
	return lag, nil
}
