package peer

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the peer's counters, registered on Registry (served on
// /metrics), named as projector's where they mean the same.
type Metrics struct {
	Registry *prometheus.Registry
	// Events counts records whose batch was written and committed:
	// peer_events_total.
	Events prometheus.Counter
	// Poison counts records that did not decode (skipped): peer_poison_total.
	Poison prometheus.Counter
	// Calls counts the script calls sent: peer_calls_total.
	Calls prometheus.Counter
	// BatchEvents is the records per batch: peer_batch_events.
	BatchEvents prometheus.Histogram
}

// NewMetrics creates the peer's metrics on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Events:   prometheus.NewCounter(prometheus.CounterOpts{Name: "peer_events_total", Help: "Records written and committed."}),
		Poison:   prometheus.NewCounter(prometheus.CounterOpts{Name: "peer_poison_total", Help: "Records that did not decode (skipped)."}),
		Calls:    prometheus.NewCounter(prometheus.CounterOpts{Name: "peer_calls_total", Help: "Script calls sent."}),
		BatchEvents: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "peer_batch_events", Help: "Records per batch.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9)}),
	}
	m.Registry.MustRegister(m.Events, m.Poison, m.Calls, m.BatchEvents,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// batch records a written and committed batch of n records.
func (m *Metrics) batch(n int) {
	m.Events.Add(float64(n))
	m.BatchEvents.Observe(float64(n))
}
