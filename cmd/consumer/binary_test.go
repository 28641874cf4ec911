package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the consumer binary built once by TestMain.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "consumer-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "consumer")
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var buildOnce = sync.OnceValues(func() ([]byte, error) {
	return exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
})

// lockedBuffer collects a process's output for concurrent reading.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is a running consumer binary.
type proc struct {
	cmd    *exec.Cmd
	out    *lockedBuffer // stdout and stderr
	done   chan struct{}
	waitEr error
}

// startBinary builds (once) and starts the consumer binary with only env
// (plus PATH and HOME), JSON logs and the HTTP endpoints on a free port. It
// is killed at the end of the test.
func startBinary(t *testing.T, env ...string) *proc {
	t.Helper()
	if out, err := buildOnce(); err != nil {
		t.Fatalf("go build ./cmd/consumer: %v\n%s", err, out)
	}
	cmd := exec.Command(binPath)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"PROJECTOR_LOG_FORMAT=json", "PROJECTOR_HTTP_ADDR=127.0.0.1:0"}, env...)
	p := &proc{cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start consumer: %v", err)
	}
	go func() { p.waitEr = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("consumer output:\n%s", p.out.String())
		}
	})
	return p
}

// wait waits up to d for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("consumer still running after %s", d)
		return -1
	}
}

// stop sends SIGTERM and waits for the exit code.
func (p *proc) stop(t *testing.T) int {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	return p.wait(t, time.Minute)
}

// logLines returns the JSON log lines (decoded) of the output.
func (p *proc) logLines() []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(p.out.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// waitLog waits up to a minute for a log line whose msg contains msg and
// returns it.
func (p *proc) waitLog(t *testing.T, msg string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, l := range p.logLines() {
			if m, _ := l["msg"].(string); strings.Contains(m, msg) {
				return l
			}
		}
		select {
		case <-p.done:
			t.Fatalf("consumer exited before logging %q", msg)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer did not log %q within a minute", msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// errorLines returns the log lines at level error.
func (p *proc) errorLines() []string {
	var out []string
	for _, l := range strings.Split(p.out.String(), "\n") {
		if strings.Contains(l, `"level":"error"`) {
			out = append(out, l)
		}
	}
	return out
}

// metrics returns the body of /metrics (the address from the start-up log).
func (p *proc) metrics(t *testing.T) string {
	t.Helper()
	addr, _ := p.waitLog(t, "http endpoints up")["addr"].(string)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	return string(b)
}

// assertNoSecret fails when the output or /metrics quote secret.
func assertNoSecret(t *testing.T, where, text, secret string) {
	t.Helper()
	if strings.Contains(text, secret) {
		t.Errorf("the secret appears in %s", where)
	}
}

// The built binary answers --version with exit code 0; built without VCS
// stamping (GOFLAGS=-buildvcs=false) it names the revision "unknown".
func TestBinaryVersion(t *testing.T) {
	if out, err := buildOnce(); err != nil {
		t.Fatalf("go build ./cmd/consumer: %v\n%s", err, out)
	}
	out, err := exec.Command(binPath, "--version").Output()
	if err != nil {
		t.Fatalf("consumer --version: %v", err)
	}
	line := strings.TrimSpace(string(out))
	if !strings.HasPrefix(line, "consumer: projector ") || !strings.Contains(line, ", revision ") {
		t.Fatalf("consumer --version: %q", line)
	}
	if strings.Contains(os.Getenv("GOFLAGS"), "-buildvcs=false") && !strings.Contains(line, "revision unknown") {
		t.Errorf("built with -buildvcs=false, yet %q names a revision", line)
	}
}
