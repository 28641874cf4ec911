package testkafka

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startAttempts is how often a start is tried with fresh ports when a chosen
// port was taken between choosing it and the JVM binding it.
const startAttempts = 3

// stopTimeout bounds how long Stop waits after SIGTERM before SIGKILL.
const stopTimeout = 30 * time.Second

// killTimeout bounds how long Kill waits for a SIGKILLed JVM to disappear.
const killTimeout = 10 * time.Second

// Broker is one combined broker+controller Kafka node started by Start or as
// a member of a Cluster. Its methods are safe for concurrent use.
type Broker struct {
	id   int
	port int
	// securePort is the SECURE listener's port (WithSASL, WithTLS), or 0.
	securePort int
	dir        string
	script     string
	cfg        config

	mu sync.Mutex // serialises Stop, Kill and Restart
}

// Start starts one Kafka node (node id 1, its own single-voter quorum) on
// free 127.0.0.1 ports with its files in a directory from tb.TempDir, by
// running `scripts/testenv/kafka.sh start`, and returns once it serves.
// Defaults: 512 MiB heap, auto.create.topics.enable=true, num.partitions=1,
// internal topics with one partition and replication 1. The JVM is killed by
// tb.Cleanup. A missing Java, missing jars or a failed start fails the test
// with the script's output (which names the fix, e.g. kafka.sh fetch).
func Start(tb testing.TB, opts ...Option) *Broker {
	tb.Helper()
	cfg, script := prepare(tb, opts)
	for attempt := 1; ; attempt++ {
		port, err := freeRange(3)
		if err != nil {
			tb.Fatalf("testkafka: choose ports: %v", err)
		}
		b := &Broker{id: 1, port: port, dir: tempDir(tb), script: script, cfg: cfg}
		if cfg.secure.enabled() {
			b.securePort = port + 2
		}
		// Registered after TempDir, so it runs before the directory is removed.
		tb.Cleanup(func() { b.cleanup(tb) })
		args := []string{
			"start", "--id", "1",
			"--port", strconv.Itoa(port), "--controller-port", strconv.Itoa(port + 1),
			"--data", b.dir,
		}
		args = append(append(append(args, runArgs(cfg)...), b.secureArgs()...), propArgs(cfg)...)
		begin := time.Now()
		out, err := runScript(script, cfg.startTimeout+formatAllowance, args...)
		if err == nil {
			tb.Logf("testkafka: broker %s started in %s", b.Addr(), time.Since(begin).Round(time.Millisecond))
			b.setUpSecure(tb)
			return b
		}
		b.Kill()
		if attempt < startAttempts && portInUse(out) {
			continue
		}
		tb.Fatalf("testkafka: start broker on %s: %v\n%s", b.Addr(), err, out)
	}
}

// prepare validates the options and finds the start script, failing tb.
func prepare(tb testing.TB, opts []Option) (config, string) {
	tb.Helper()
	cfg, err := applyOptions(opts)
	if err != nil {
		tb.Fatalf("testkafka: %v", err)
	}
	script, err := findScript()
	if err != nil {
		tb.Fatalf("testkafka: find %s: %v", scriptPath, err)
	}
	return cfg, script
}

// tempDir returns a new temporary directory of tb with symlinks resolved,
// as the script sees it (pwd -P), so pid checks match the JVM command line.
func tempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatalf("testkafka: resolve temporary directory: %v", err)
	}
	return dir
}

// runArgs returns the script arguments every start and restart shares: the
// wait timeout and this process as the owner whose death kills the JVMs.
func runArgs(cfg config) []string {
	secs := int((cfg.startTimeout + time.Second - 1) / time.Second)
	return []string{"--timeout", strconv.Itoa(secs), "--owner-pid", strconv.Itoa(os.Getpid())}
}

// propArgs returns the --prop arguments of a first start.
func propArgs(cfg config) []string {
	var args []string
	for _, kv := range cfg.props {
		args = append(args, "--prop", kv)
	}
	return args
}

// ID returns the node id (1 for Start; 1..n in a Cluster).
func (b *Broker) ID() int { return b.id }

// Addr returns the broker's client address, "127.0.0.1:<port>".
func (b *Broker) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.port) }

// Addrs returns the bootstrap addresses for clients: the broker's own
// address only (for a cluster use Cluster.Addrs).
func (b *Broker) Addrs() []string { return []string{b.Addr()} }

// Dir returns the node's directory: server.properties, broker.log (the
// JVM's output), broker.pid and the Kafka data in data/.
func (b *Broker) Dir() string { return b.dir }

// configPath is the properties file the JVM was started with.
func (b *Broker) configPath() string { return filepath.Join(b.dir, "server.properties") }

// pid returns the pid of the node's running JVM, or 0 when it is not
// running.
func (b *Broker) pid() int {
	data, err := os.ReadFile(filepath.Join(b.dir, "broker.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 || !jvmAlive(pid, b.configPath()) {
		return 0
	}
	return pid
}

// Running reports whether the node's JVM is running.
func (b *Broker) Running() bool { return b.pid() != 0 }

// Stop shuts the node down gracefully (SIGTERM: controlled shutdown, logs
// flushed) and waits for the JVM to exit; after 30s it is SIGKILLed.
// Stopping a stopped node does nothing.
func (b *Broker) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopLocked()
}

func (b *Broker) stopLocked() {
	pid := b.pid()
	if pid == 0 {
		return
	}
	id := identify(pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if !waitGone(id, stopTimeout) {
		b.killLocked()
	}
}

// Kill sends SIGKILL to the node's JVM and waits until it is gone, as in a
// crash: the page cache survives, so acknowledged records do too. Killing a
// stopped node does nothing. Cleanup calls Kill.
func (b *Broker) Kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.killLocked()
}

func (b *Broker) killLocked() {
	pid := b.pid()
	if pid == 0 {
		return
	}
	id := identify(pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	waitGone(id, killTimeout)
}

// waitGone polls until the process has exited completely (its sockets
// closed, so its ports refuse connections); false on timeout.
func waitGone(id procID, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !id.gone() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Restart starts the node again with the same ports, configuration and
// data (kafka.sh restart) and waits until it serves. A running node is
// stopped gracefully first. Failure fails tb.
func (b *Broker) Restart(tb testing.TB) {
	tb.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopLocked()
	// The properties were written at the first start; restart reuses them.
	args := append([]string{"restart", "--data", b.dir}, runArgs(b.cfg)...)
	begin := time.Now()
	out, err := runScript(b.script, b.cfg.startTimeout+formatAllowance, args...)
	if err != nil {
		b.killLocked()
		tb.Fatalf("testkafka: restart broker %d on %s: %v\n%s", b.id, b.Addr(), err, out)
	}
	tb.Logf("testkafka: broker %d on %s restarted in %s", b.id, b.Addr(), time.Since(begin).Round(time.Millisecond))
}

// CreateTopic creates topic name with the given number of partitions and
// replication factor 1, and waits until the broker's metadata shows a
// leader for every partition. Failure fails tb.
func (b *Broker) CreateTopic(tb testing.TB, name string, partitions int) {
	tb.Helper()
	if err := createTopic([]*Broker{b}, name, partitions, 1); err != nil {
		tb.Fatalf("testkafka: %v", err)
	}
}

// AddPartitions raises topic name to total partitions and waits until the
// broker's metadata shows a leader for every one of them. Failure fails tb.
func (b *Broker) AddPartitions(tb testing.TB, name string, total int) {
	tb.Helper()
	if err := addPartitions([]*Broker{b}, name, total); err != nil {
		tb.Fatalf("testkafka: %v", err)
	}
}

// cleanup kills the JVM at the end of the test and, when the test failed,
// logs the node's last warnings and errors.
func (b *Broker) cleanup(tb testing.TB) {
	b.Kill()
	if tb.Failed() {
		tb.Logf("testkafka: last warnings and errors of %s (%s):\n%s", b, filepath.Join(b.dir, "broker.log"), b.logProblems(failureLogLines))
	}
}

// failureLogLines is how many WARN/ERROR lines a failed test shows per node.
const failureLogLines = 15

// logProblems returns the last n WARN or ERROR lines of broker.log.
func (b *Broker) logProblems(n int) string {
	data, err := os.ReadFile(filepath.Join(b.dir, "broker.log"))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		// Peers not yet listening during start-up is expected noise.
		if strings.Contains(l, "could not be established") {
			continue
		}
		if strings.Contains(l, "] WARN ") || strings.Contains(l, "] ERROR ") {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lines, "\n")
}

// String describes the broker for messages.
func (b *Broker) String() string {
	return fmt.Sprintf("broker %d (%s)", b.id, b.Addr())
}
