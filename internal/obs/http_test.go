package obs

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// get fetches path from h and returns status and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// gauge returns the current value of projector_ready from the registry.
func readyGauge(t *testing.T, m *Metrics) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "projector_ready" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("projector_ready not gathered")
	return 0
}

func TestReadyzFlips(t *testing.T) {
	m := NewMetrics()
	h := NewHealth(m)
	handler := NewHTTPHandler(m, h)

	if code, body := get(t, handler, "/readyz"); code != http.StatusServiceUnavailable || body != "starting" {
		t.Fatalf("initial /readyz = %d %q, want 503 \"starting\"", code, body)
	}
	if v := readyGauge(t, m); v != 0 {
		t.Fatalf("projector_ready = %v initially, want 0", v)
	}

	h.SetReady(true, "")
	if code, body := get(t, handler, "/readyz"); code != http.StatusOK || body != "ready" {
		t.Fatalf("/readyz when ready = %d %q, want 200 \"ready\"", code, body)
	}
	if v := readyGauge(t, m); v != 1 {
		t.Fatalf("projector_ready = %v when ready, want 1", v)
	}

	h.SetReady(false, "redis data lost; waiting for replayer")
	code, body := get(t, handler, "/readyz")
	if code != http.StatusServiceUnavailable || body != "redis data lost; waiting for replayer" {
		t.Fatalf("/readyz when not ready = %d %q", code, body)
	}
	if ok, reason := h.Ready(); ok || reason != "redis data lost; waiting for replayer" {
		t.Fatalf("Ready() = %v %q", ok, reason)
	}
	if v := readyGauge(t, m); v != 0 {
		t.Fatalf("projector_ready = %v when not ready, want 0", v)
	}

	h.SetReady(false, "")
	if code, body := get(t, handler, "/readyz"); code != http.StatusServiceUnavailable || body != "not ready" {
		t.Fatalf("/readyz with empty reason = %d %q", code, body)
	}
	if code, body := get(t, handler, "/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("/healthz = %d %q, want 200 \"ok\"", code, body)
	}
}

func TestMetricsExposeEveryName(t *testing.T) {
	m := NewMetrics()
	m.Events.WithLabelValues("view", OutcomeApplied).Inc()
	m.Duplicates.Inc()
	m.DeadLettered.WithLabelValues("shop.views").Inc()
	m.BatchDuration.Observe(0.002)
	m.BatchEvents.Observe(42)
	m.RedisErrors.WithLabelValues("apply").Inc()
	m.RedisRetries.Inc()
	m.Commits.Inc()
	m.KafkaCommitErrors.Inc()
	m.DeadLetterErrors.Inc()
	m.KafkaFetchErrors.Inc()
	m.ConsumerLag.WithLabelValues("shop.views", "3").Set(17)
	m.LastAppliedEventTimestamp.Set(1.7e9)
	m.RedisDataLost.Set(1)
	m.Ready.Set(1)
	m.KeysWritten.Inc()
	m.ScriptCalls.WithLabelValues(SlotUser).Inc()

	_, body := get(t, NewHTTPHandler(m, NewHealth(nil)), "/metrics")
	want := []string{
		`projector_events_total{outcome="applied",type="view"} 1`,
		`projector_duplicates_total 1`,
		`projector_dead_lettered_total{topic="shop.views"} 1`,
		`projector_batch_duration_seconds_bucket{le="0.0005"} 0`,
		`projector_batch_duration_seconds_bucket{le="5"} 1`,
		`projector_batch_duration_seconds_count 1`,
		`projector_batch_events_count 1`,
		`projector_redis_errors_total{op="apply"} 1`,
		`projector_redis_retries_total 1`,
		`projector_commits_total 1`,
		`projector_kafka_commit_errors_total 1`,
		`projector_dead_letter_errors_total 1`,
		`projector_kafka_fetch_errors_total 1`,
		`projector_consumer_lag{partition="3",topic="shop.views"} 17`,
		`projector_last_applied_event_timestamp_seconds 1.7e+09`,
		`projector_redis_data_lost 1`,
		`projector_ready 1`,
		`projector_keys_written_total 1`,
		`projector_script_calls_total{slot="user"} 1`,
		`go_goroutines `,
		`process_cpu_seconds_total `,
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}
}

func TestMetricsUsePrivateRegistry(t *testing.T) {
	// Two instances must not collide, as they would on the global registry.
	a, b := NewMetrics(), NewMetrics()
	a.Commits.Inc()
	_, body := get(t, NewHTTPHandler(b, NewHealth(b)), "/metrics")
	if !strings.Contains(body, "projector_commits_total 0") {
		t.Errorf("second registry sees the first one's commit: %q", body)
	}
}

func TestServe(t *testing.T) {
	m := NewMetrics()
	h := NewHealth(m)
	h.SetReady(true, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := Serve(ctx, "127.0.0.1:0", NewHTTPHandler(m, h), nil)
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("Serve returned unbound address %q", addr)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ready" {
		t.Fatalf("GET /readyz = %d %q", resp.StatusCode, body)
	}

	if _, err := Serve(ctx, addr, NewHTTPHandler(m, h), nil); err == nil {
		t.Fatal("Serve on a busy address succeeded, want an error")
	}

	// Ending ctx shuts the server down: the port stops answering.
	cancel()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("server still answers 10s after ctx ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
