package obs

import "sync"

// Health is the process's readiness state, safe for concurrent use. It
// starts not ready with reason "starting".
type Health struct {
	mu     sync.Mutex
	ready  bool
	reason string
	m      *Metrics
}

// NewHealth returns a not-ready Health. With non-nil m it keeps m.Ready
// (projector_ready) equal to 1 when ready and 0 otherwise.
func NewHealth(m *Metrics) *Health {
	h := &Health{reason: "starting", m: m}
	if m != nil {
		m.Ready.Set(0)
	}
	return h
}

// SetReady records readiness. reason says why the process is not ready (it
// is shown by /readyz); it is kept but not shown while ready.
func (h *Health) SetReady(ready bool, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ready, h.reason = ready, reason
	if h.m != nil {
		v := 0.0
		if ready {
			v = 1
		}
		h.m.Ready.Set(v)
	}
}

// Ready returns the current readiness and the reason given with it.
func (h *Health) Ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ready, h.reason
}
