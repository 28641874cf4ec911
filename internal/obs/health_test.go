package obs

import (
	"net/http"
	"testing"
)

// TestConditionsSurviveSetReady: a condition keeps the process not ready
// through SetReady(true) of the pipeline, is shown with the main reason,
// and readiness returns only when every condition is cleared.
func TestConditionsSurviveSetReady(t *testing.T) {
	m := NewMetrics()
	h := NewHealth(m)
	handler := NewHTTPHandler(m, h)

	h.SetCondition("topics", "kafka topics missing: shop.orders")
	h.SetReady(true, "") // the pipeline recovers: must not clear the condition
	if code, body := get(t, handler, "/readyz"); code != http.StatusServiceUnavailable || body != "kafka topics missing: shop.orders" {
		t.Fatalf("/readyz with a condition = %d %q", code, body)
	}
	if v := readyGauge(t, m); v != 0 {
		t.Fatalf("projector_ready = %v with a condition, want 0", v)
	}

	h.SetReady(false, "apply failing: redis down")
	h.SetCondition("a-first", "first by name")
	if ok, reason := h.Ready(); ok || reason != "apply failing: redis down; first by name; kafka topics missing: shop.orders" {
		t.Fatalf("Ready() = %v %q, want the main reason, then the conditions by name", ok, reason)
	}

	h.SetReady(true, "")
	h.SetCondition("a-first", "")
	if ok, reason := h.Ready(); ok || reason != "kafka topics missing: shop.orders" {
		t.Fatalf("Ready() after clearing one condition = %v %q", ok, reason)
	}
	h.SetCondition("topics", "")
	if code, body := get(t, handler, "/readyz"); code != http.StatusOK || body != "ready" {
		t.Fatalf("/readyz with no condition left = %d %q, want 200 ready", code, body)
	}
	if v := readyGauge(t, m); v != 1 {
		t.Fatalf("projector_ready = %v when ready, want 1", v)
	}

	h.SetCondition("topics", "kafka topics missing: x")
	h.SetCondition("topics", "")
	h.SetReady(false, "stopping")
	if ok, reason := h.Ready(); ok || reason != "stopping" {
		t.Fatalf("Ready() = %v %q, want the main reason alone", ok, reason)
	}
}
