package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"projector/internal/testredis"
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

func TestServesAPIMetricsAndHealth(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	srv.Client().HSet(ctx, "shop:px:meta:{g}", "status", "ready")
	runCtx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"--http-addr", "127.0.0.1:0", "--key-prefix", "shop:", "--log-level", "error"},
			[]string{"PROJECTOR_REDIS_ADDRS=" + srv.Addr(), "PROJECTOR_KAFKA_BROKERS=127.0.0.1:1"}, pw, io.Discard)
		_ = pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no start line: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base := regexp.MustCompile(`http://[^/ ]+`).FindString(line)
	if base == "" {
		t.Fatalf("start line without URL: %q", line)
	}
	get := func(path string) (int, string) {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
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
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit code %d after cancel", code)
	}
}
