package obs

import (
	"sort"
	"strings"
	"sync"
)

// Health is the process's readiness state, safe for concurrent use. It
// starts not ready with reason "starting".
//
// Readiness has two parts: the main state set by SetReady, which the
// process's pipeline flips as it goes, and named conditions set by
// SetCondition, each held by a watcher of its own (for example "topics"
// while a configured Kafka topic does not exist). The process is ready only
// while the main state is ready and no condition holds, so a pipeline that
// recovers does not clear a condition it knows nothing of.
type Health struct {
	mu     sync.Mutex
	ready  bool
	reason string
	conds  map[string]string // condition name -> reason, only those that hold
	m      *Metrics
}

// NewHealth returns a not-ready Health. With non-nil m it keeps m.Ready
// (projector_ready) equal to 1 when ready and 0 otherwise.
func NewHealth(m *Metrics) *Health {
	h := &Health{reason: "starting", conds: map[string]string{}, m: m}
	if m != nil {
		m.Ready.Set(0)
	}
	return h
}

// SetReady records the main readiness state. reason says why the process is
// not ready (it is shown by /readyz); it is kept but not shown while ready.
func (h *Health) SetReady(ready bool, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ready, h.reason = ready, reason
	h.publish()
}

// SetCondition makes the condition name hold with reason, which keeps the
// process not ready; an empty reason clears it.
func (h *Health) SetCondition(name, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if reason == "" {
		delete(h.conds, name)
	} else {
		h.conds[name] = reason
	}
	h.publish()
}

// Ready returns the current readiness and the reasons given with it: the
// main state's reason when it is not ready, then the reasons of the
// conditions that hold (by name), joined by "; ".
func (h *Health) Ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.conds) == 0 {
		return h.ready, h.reason
	}
	var reasons []string
	if !h.ready && h.reason != "" {
		reasons = append(reasons, h.reason)
	}
	names := make([]string, 0, len(h.conds))
	for n := range h.conds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		reasons = append(reasons, h.conds[n])
	}
	return false, strings.Join(reasons, "; ")
}

// publish keeps projector_ready in step; h.mu is held.
func (h *Health) publish() {
	if h.m == nil {
		return
	}
	v := 0.0
	if h.ready && len(h.conds) == 0 {
		v = 1
	}
	h.m.Ready.Set(v)
}
