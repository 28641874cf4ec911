package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"projector/internal/testing/testredis"
)

// Bad configuration stops the API with exit code 2 and one line naming the key.
func TestBadConfigurationExitsTwo(t *testing.T) {
	for _, c := range []struct {
		env []string
		key string
	}{
		{[]string{"PROJECTOR_TIME_ZONE=Nowhere/Land"}, "time_zone"},
		{[]string{"PROJECTOR_PROJECTIONS_HISTORY_SIZE=0"}, "projections.history.size"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), nil, c.env, &out, &errOut)
		msg := strings.TrimRight(errOut.String(), "\n")
		if code != 2 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, c.key) {
			t.Errorf("env %v: exit %d, stderr %q; want 2 and one line naming %s", c.env, code, msg, c.key)
		}
	}
}

// api is a running run() of the command.
type api struct {
	base   string
	cancel context.CancelFunc
	done   chan int
	once   sync.Once
	code   int
}

// startAPI runs the command with args and environ until the test stops it,
// and returns once it printed its URL.
func startAPI(t *testing.T, args, environ []string) *api {
	t.Helper()
	runCtx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	a := &api{cancel: cancel, done: make(chan int, 1)}
	go func() {
		a.done <- run(runCtx, args, environ, pw, io.Discard)
		_ = pw.Close()
	}()
	t.Cleanup(func() { a.stop() })
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no start line: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if a.base = regexp.MustCompile(`http://[^/ ]+`).FindString(line); a.base == "" {
		t.Fatalf("start line without URL: %q", line)
	}
	return a
}

// get returns the status code and body of GET path.
func (a *api) get(t *testing.T, path string) (int, string) {
	t.Helper()
	res, err := http.Get(a.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// stop cancels the command and returns its exit code (-1 when it did not
// return within 10 s).
func (a *api) stop() int {
	a.once.Do(func() {
		a.cancel()
		select {
		case a.code = <-a.done:
		case <-time.After(10 * time.Second):
			a.code = -1
		}
	})
	return a.code
}

func TestServesAPIMetricsAndHealth(t *testing.T) {
	srv := testredis.StartStandalone(t)
	srv.Client().HSet(context.Background(), "shop:px:meta:{g}", "status", "ready")
	a := startAPI(t, []string{"--http-addr", "127.0.0.1:0", "--key-prefix", "shop:", "--log-level", "error"},
		[]string{"PROJECTOR_REDIS_ADDRS=" + srv.Addr(), "PROJECTOR_KAFKA_BROKERS=127.0.0.1:1"})
	get := func(path string) (int, string) { return a.get(t, path) }
	for range 100 { // readiness follows the first PING
		if code, _ := get("/readyz"); code == http.StatusOK {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for path, want := range map[string]string{
		"/readyz":               "ready",
		"/healthz":              "ok",
		"/api/status":           `"projections":"ready"`,
		"/api/bestsellers/week": `"items":[]`,
		"/":                     "<title>projector dashboard</title>",
	} {
		if code, body := get(path); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %.200s; want 200 with %s", path, code, body, want)
		}
	}
	if code, body := get("/api/history?user=a%7Bb"); code != http.StatusBadRequest {
		t.Errorf("bad user id: %d %s", code, body)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{`projector_api_requests_total{code="400",route="/api/history"} 1`, "projector_ready 1", "go_goroutines"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if code := a.stop(); code != 0 {
		t.Fatalf("exit code %d after cancel", code)
	}
}

// --version prints one line naming the command, the module version and the
// VCS revision and exits 0, whatever the rest of the configuration says.
func TestVersionFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--version"}, []string{"PROJECTOR_NO_SUCH_KEY=1"}, &out, &errOut)
	line := strings.TrimRight(out.String(), "\n")
	if code != 0 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "api: projector ") || !strings.Contains(line, ", revision ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want 0 and one line naming api, the module and the revision", code, line, errOut.String())
	}
}
