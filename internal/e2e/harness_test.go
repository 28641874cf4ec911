package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"projector/internal/gen"
	"projector/internal/testing/testkafka"
)

// consumerBin, replayerBin and apiBin are the binaries built once by TestMain.
var consumerBin, replayerBin, apiBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "projector-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	consumerBin, replayerBin, apiBin = filepath.Join(dir, "consumer"), filepath.Join(dir, "replayer"), filepath.Join(dir, "api")
	for bin, pkg := range map[string]string{consumerBin: "projector/cmd/consumer", replayerBin: "projector/cmd/replayer",
		apiBin: "projector/cmd/api"} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", pkg+":", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startKafka starts an in-process Kafka-protocol broker with the input topics
// (partitions each) and a one-partition dead-letter topic.
func startKafka(t *testing.T, partitions int, topics []string, dlq string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), topics...), kfake.SeedTopics(1, dlq))
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// startApacheKafka starts a real Apache Kafka broker with the input topics
// (partitions each) and a one-partition dead-letter topic.
func startApacheKafka(t *testing.T, partitions int, topics []string, dlq string, opts ...testkafka.Option) []string {
	t.Helper()
	b := testkafka.Start(t, opts...)
	for _, topic := range topics {
		b.CreateTopic(t, topic, partitions)
	}
	b.CreateTopic(t, dlq, 1)
	return b.Addrs()
}

// generate returns n generated records with event times in the span before
// start (the seed from testSeed).
func generate(t *testing.T, start time.Time, span time.Duration, n int) []gen.Record {
	gc := gen.DefaultConfig()
	gc.Seed = testSeed(t)
	gc.Start, gc.Span = start.Add(-span), span
	return gen.New(gc).Log(n)
}

// produce publishes records in order, in chunks with a pause between them, so
// production goes on while consumers crash. It reports the first error on done.
func produce(ctx context.Context, brokers []string, recs []gen.Record, chunk int, pause time.Duration, done chan<- error) {
	w := newWriter(brokers, chunk)
	defer w.Close()
	for i := 0; i < len(recs); i += chunk {
		end := min(i+chunk, len(recs))
		msgs := messages(recs[i:end])
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			done <- fmt.Errorf("produce records %d..%d: %w", i, end, err)
			return
		}
		select {
		case <-ctx.Done():
			done <- ctx.Err()
			return
		case <-time.After(pause):
		}
	}
	done <- nil
}

// newWriter returns the tests' producer: records go to the partition their
// key hashes to, those marked OtherPartition to the next one.
func newWriter(brokers []string, batch int) *kafka.Writer {
	return &kafka.Writer{Addr: kafka.TCP(brokers...), Balancer: movingBalancer{}, BatchTimeout: time.Millisecond,
		BatchSize: batch, RequiredAcks: kafka.RequireAll, MaxAttempts: 20}
}

// moved marks (in kafka.Message.WriterData) a record that movingBalancer
// publishes in another partition than its key's.
type moved struct{}

// messages returns recs as messages for newWriter.
func messages(recs []gen.Record) []kafka.Message {
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		msgs[i] = kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value}
		if r.OtherPartition {
			msgs[i].WriterData = moved{}
		}
	}
	return msgs
}

// movingBalancer is kafka.Hash, but for records marked moved, which go to
// the partition after their key's.
type movingBalancer struct{}

// Balance picks msg's partition.
func (movingBalancer) Balance(msg kafka.Message, partitions ...int) int {
	h := (&kafka.Hash{}).Balance(msg, partitions...)
	if _, ok := msg.WriterData.(moved); ok && len(partitions) > 1 {
		for i, p := range partitions {
			if p == h {
				return partitions[(i+1)%len(partitions)]
			}
		}
	}
	return h
}

// proc is one running consumer process.
type proc struct {
	cmd     *exec.Cmd
	log     *bytes.Buffer
	done    chan error
	started time.Time
}

// cleanEnv is the test's environment without PROJECTOR_* variables, plus env.
func cleanEnv(env []string) []string {
	base := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PROJECTOR_") {
			base = append(base, kv)
		}
	}
	return append(base, env...)
}

// startConsumer runs the built consumer with env (PROJECTOR_* settings only).
func startConsumer(t *testing.T, env []string) *proc {
	t.Helper()
	return startProcess(t, consumerBin, env)
}

// startProcess runs a built binary with env (PROJECTOR_* settings only) and
// args; its output is kept in log (read it after the process ended).
func startProcess(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	name := filepath.Base(bin)
	cmd := exec.Command(bin, args...)
	cmd.Env = cleanEnv(env)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{cmd: cmd, log: &buf, done: make(chan error, 1), started: time.Now()}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if dir := os.Getenv("E2E_LOG_DIR"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, cmd.Process.Pid)), buf.Bytes(), 0o644)
		}
		if t.Failed() {
			f, err := os.CreateTemp("", fmt.Sprintf("projector-%s-%d-*.log", name, cmd.Process.Pid))
			if err == nil {
				_, _ = f.Write(buf.Bytes())
				f.Close()
				t.Logf("%s pid %d output: %s; tail:\n%s", name, cmd.Process.Pid, f.Name(), tail(buf.String(), 1500))
			}
		}
		p.done <- nil
	})
	return p
}

// dumpStacks makes the Go runtime print every goroutine (SIGQUIT) and waits for the exit.
func (p *proc) dumpStacks() {
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.done:
		p.done <- nil
	case <-time.After(5 * time.Second):
	}
}

// exitCode waits up to timeout for the process to end by itself and returns
// its exit code.
func (p *proc) exitCode(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		p.done <- nil
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v", filepath.Base(p.cmd.Path), timeout)
		return -1
	}
}

// kill9 kills the process without warning.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	<-p.done
	p.done <- nil
}

// term sends SIGTERM and asserts a clean exit with code 0.
func (p *proc) term(t *testing.T) {
	t.Helper()
	// A SIGTERM before the process installed its handler (Go runtime and
	// package start-up, first thing in main) ends it by the default action,
	// "signal: terminated": a chaos run whose last kill came just before the
	// end stopped its brand-new replacement that way. Start-up takes far
	// less than this.
	if d := termAfter - time.Since(p.started); d > 0 {
		time.Sleep(d)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case err := <-p.done:
		p.done <- nil
		if err != nil {
			t.Fatalf("consumer exit after SIGTERM: %v\n%s", err, tail(p.log.String(), 3000))
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("consumer did not stop within 60s of SIGTERM")
	}
}

// termAfter is how long after its start a process is sent SIGTERM at the earliest.
const termAfter = 5 * time.Second

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
