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

	"projector/internal/kafkalag"
)

// Kafka is one Apache Kafka broker started with scripts/testenv/kafka.sh.
type Kafka struct {
	script string
	dir    string
	addr   string
	// lib holds the distribution's jars (its tools run from there);
	// jmxPort is the broker's JMX port on 127.0.0.1.
	lib     string
	jmxPort int
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
	jmx, err := freePort(false)
	if err != nil {
		return nil, err
	}
	testenv := os.Getenv("PROJECTOR_TESTENV_DIR")
	if testenv == "" {
		testenv = filepath.Join(repo, ".testenv")
	}
	k := &Kafka{script: filepath.Join(repo, "scripts/testenv/kafka.sh"), dir: filepath.Join(dir, "kafka"),
		lib: filepath.Join(testenv, "kafka", "lib"), jmxPort: jmx}
	cmd := exec.CommandContext(ctx, k.script, "start", "--port", strconv.Itoa(port), "--controller-port", strconv.Itoa(cport),
		"--data", k.dir, "--heap", "1g", "--owner-pid", strconv.Itoa(os.Getpid()),
		"--prop", "auto.create.topics.enable=false")
	// The JIT's full tiers, as a production broker runs (the test brokers
	// stop at C1 to start fast), and JMX on loopback only, for the broker's
	// request metrics (fetchWatch).
	cmd.Env = append(os.Environ(), "PROJECTOR_KAFKA_JVM_OPTS="+strings.Join([]string{"-XX:TieredStopAtLevel=4",
		os.Getenv("PROJECTOR_KAFKA_JVM_OPTS"), "-Dcom.sun.management.jmxremote", "-Dcom.sun.management.jmxremote.port=" + strconv.Itoa(jmx),
		"-Dcom.sun.management.jmxremote.rmi.port=" + strconv.Itoa(jmx), "-Dcom.sun.management.jmxremote.host=127.0.0.1",
		"-Djava.rmi.server.hostname=127.0.0.1", "-Dcom.sun.management.jmxremote.authenticate=false",
		"-Dcom.sun.management.jmxremote.ssl=false"}, " "))
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

// CPUSeconds returns the broker JVM's CPU time so far (its pid is in the
// data directory's broker.pid, written by kafka.sh).
func (k *Kafka) CPUSeconds() (float64, error) {
	b, err := os.ReadFile(filepath.Join(k.dir, "broker.pid"))
	if err != nil {
		return 0, fmt.Errorf("read broker pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("broker pid: %w", err)
	}
	return pidCPUSeconds(pid)
}

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

// Lag returns the group's total lag over the topics (internal/kafkalag).
func (k *Kafka) Lag(ctx context.Context, group string, topics []string) (int64, error) {
	client := &kafka.Client{Addr: kafka.TCP(k.addr), Timeout: 10 * time.Second}
	ps, err := kafkalag.Measure(ctx, client, group, topics)
	if err != nil {
		return 0, err
	}
	return kafkalag.Total(ps), nil
}

// GroupStable reports whether the group has completed joining (its state
// is Stable). kafka-go cannot decode the member metadata of newer Java
// clients, so the state is read even when that decoding failed.
func (k *Kafka) GroupStable(ctx context.Context, group string) (bool, error) {
	client := &kafka.Client{Addr: kafka.TCP(k.addr), Timeout: 10 * time.Second}
	res, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return false, fmt.Errorf("describe group %s: %w", group, err)
	}
	for _, g := range res.Groups {
		if g.GroupID == group {
			return g.GroupState == "Stable", nil
		}
	}
	return false, nil
}
