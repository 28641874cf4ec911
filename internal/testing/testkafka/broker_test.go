package testkafka

import (
	"fmt"
	"maps"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestBrokerProduceConsumeRestart(t *testing.T) {
	b := Start(t, WithProps("message.max.bytes=3145728", "auto.create.topics.enable=false"))
	if host, _, err := net.SplitHostPort(b.Addr()); err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr() = %q, want 127.0.0.1:<port>", b.Addr())
	}
	if got := b.Addrs(); len(got) != 1 || got[0] != b.Addr() {
		t.Fatalf("Addrs() = %v, want [%s]", got, b.Addr())
	}
	client := newClient(t, b.Addrs())
	for key, want := range map[string]string{"message.max.bytes": "3145728", "auto.create.topics.enable": "false"} {
		if got := brokerConfig(t, client, b.ID(), key); got != want {
			t.Errorf("broker config %s = %q, want %q (WithProps)", key, got, want)
		}
	}

	const topic, partitions, n = "events", 4, 1000
	b.CreateTopic(t, topic, partitions)
	produce(t, b.Addrs(), topic, keyedMessages(0, n))
	got := consume(t, b.Addrs(), topic, "g1", n)

	// Every message exactly once; one key's messages in one partition, in
	// production order; all partitions used.
	seen := map[int]bool{}
	keyPartition := map[string]int{}
	lastOfKey := map[string]int{}
	perPartition := map[int]int{}
	for _, m := range got {
		v := valueNumber(t, m)
		if seen[v] {
			t.Fatalf("value v-%d consumed twice", v)
		}
		seen[v] = true
		k := string(m.Key)
		if p, ok := keyPartition[k]; ok && p != m.Partition {
			t.Fatalf("key %s in partitions %d and %d", k, p, m.Partition)
		}
		keyPartition[k] = m.Partition
		if last, ok := lastOfKey[k]; ok && v < last {
			t.Fatalf("key %s: v-%d consumed after v-%d", k, v, last)
		}
		lastOfKey[k] = v
		perPartition[m.Partition]++
	}
	if len(seen) != n {
		t.Fatalf("consumed %d distinct messages, want %d", len(seen), n)
	}
	if len(perPartition) != partitions {
		t.Fatalf("messages in %d partitions (%v), want %d", len(perPartition), perPartition, partitions)
	}

	committed := committedOffsets(t, client, "g1", topic, partitions)
	if s := sum(committed); s != n {
		t.Fatalf("committed offsets %v sum to %d, want %d", committed, s, n)
	}
	if ends := endOffsets(t, client, topic, partitions); !maps.Equal(ends, committed) {
		t.Fatalf("committed offsets %v, end offsets %v: want equal", committed, ends)
	}

	b.Stop()
	if b.Running() {
		t.Fatal("Running() after Stop = true")
	}
	if c, err := net.Dial("tcp", b.Addr()); err == nil {
		c.Close()
		t.Fatalf("%s accepts connections after Stop", b.Addr())
	}
	b.Restart(t)
	if !b.Running() {
		t.Fatal("Running() after Restart = false")
	}
	if after := committedOffsets(t, client, "g1", topic, partitions); !maps.Equal(after, committed) {
		t.Fatalf("committed offsets after restart %v, before %v", after, committed)
	}
	// The group resumes where it committed: the next messages it reads are
	// the new ones, not a replay from the start.
	produce(t, b.Addrs(), topic, keyedMessages(n, 10))
	for _, m := range consume(t, b.Addrs(), topic, "g1", 10) {
		if v := valueNumber(t, m); v < n {
			t.Fatalf("after restart group g1 read old message v-%d", v)
		}
	}

	// A crash (SIGKILL) loses no acknowledged record.
	b.Kill()
	if b.Running() {
		t.Fatal("Running() after Kill = true")
	}
	b.Restart(t)
	if s := sum(endOffsets(t, client, topic, partitions)); s != n+10 {
		t.Fatalf("after kill and restart the topic holds %d records, want %d", s, n+10)
	}

	// Partitions added to the topic serve at once; the old ones keep their records.
	b.AddPartitions(t, topic, partitions+2)
	ends := endOffsets(t, client, topic, partitions+2)
	if ends[partitions] != 0 || ends[partitions+1] != 0 || sum(ends) != n+10 {
		t.Fatalf("end offsets after adding 2 partitions %v, want the new ones empty and %d records in all", ends, n+10)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the calling goroutine, so a test can check how a helper fails.
type fatalRecorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalRecorder) Helper() {}

func TestStartWithoutJarsFailsWithFix(t *testing.T) {
	t.Setenv("PROJECTOR_TESTENV_DIR", t.TempDir())
	rec := &fatalRecorder{TB: t}
	done := make(chan *Broker)
	go func() {
		var b *Broker
		defer func() { done <- b }()
		b = Start(rec)
	}()
	if b := <-done; b != nil {
		t.Fatalf("Start returned broker %s without jars", b.Addr())
	}
	if !strings.Contains(rec.msg, "kafka.sh fetch") {
		t.Fatalf("failure message does not name the fix (kafka.sh fetch):\n%s", rec.msg)
	}
}

func TestOptionsValidated(t *testing.T) {
	if _, err := applyOptions([]Option{WithProps("no-equals-sign")}); err == nil {
		t.Fatal("WithProps(\"no-equals-sign\") accepted")
	}
	cfg, err := applyOptions([]Option{WithProps("a=1", "b=x=y")})
	if err != nil || len(cfg.props) != 2 {
		t.Fatalf("WithProps(a=1, b=x=y) = %v, %v", cfg.props, err)
	}
}
