// Package status reports the health of the consumers for the dashboard:
// what they publish in Redis (px:meta:{g}, px:cfg:{g}, px:wm:{g}) and their
// lag, measured from Kafka (end offsets minus the group's committed offsets,
// with ListOffsets and OffsetFetch) by a poller.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"projector/internal/coord"
	"projector/internal/fingerprint"
	"projector/internal/kafkalag"
	"projector/pkg/projections"
)

// Options configure a Monitor.
type Options struct {
	// RDB is the projections' Redis; KeyPrefix is redis.key_prefix.
	RDB       redis.UniversalClient
	KeyPrefix string
	// Kafka measures lag; nil means lag is not measured.
	Kafka *kafka.Client
	// Group and Topics are kafka.group_id and kafka.topics.
	Group  string
	Topics []string
	// Interval between lag measurements (default 5s).
	Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Consumer is one consumer process seen in px:cfg:{g}.
type Consumer struct {
	Process string `json:"process"`
	// LastSeen is the time of its last refresh, Unix ms.
	LastSeen int64 `json:"last_seen"`
	// Alive: refreshed within fingerprint.TTL.
	Alive bool `json:"alive"`
}

// Partition is one partition's lag.
type Partition = kafkalag.Partition

// Lag is the last lag measurement.
type Lag struct {
	// Total is the sum over partitions.
	Total      int64       `json:"total"`
	Partitions []Partition `json:"partitions"`
	// MeasuredAt is Unix ms; 0 before the first measurement.
	MeasuredAt int64 `json:"measured_at"`
	// Error is why the last measurement failed, or why lag is not measured.
	Error string `json:"error,omitempty"`
}

// Status is what the dashboard shows about the consumers.
type Status struct {
	// Projections is the status field of px:meta:{g} (ready, rebuilding,
	// ...), or "missing" when Redis holds no projections.
	Projections string `json:"projections"`
	// Holds lists the global projections held for a rebuild next to
	// running consumers.
	Holds []string `json:"holds"`
	// Rebuilding lists the projections being rebuilt, with progress.
	Rebuilding []Rebuild  `json:"rebuilding"`
	Consumers  []Consumer `json:"consumers"`
	// Alive counts the consumers refreshed within fingerprint.TTL.
	Alive int `json:"alive"`
	Lag   Lag `json:"lag"`
}

// Monitor keeps the last lag measurement and reads the rest on demand.
type Monitor struct {
	opts Options
	mu   sync.Mutex
	lag  Lag
}

// New returns a Monitor; call Run to measure lag.
func New(opts Options) *Monitor {
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Monitor{opts: opts}
	if opts.Kafka == nil {
		m.lag.Error = "not measured: no Kafka brokers configured"
	}
	return m
}

// Run measures lag every Interval until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	if m.opts.Kafka == nil {
		return
	}
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		mctx, cancel := context.WithTimeout(ctx, m.opts.Interval)
		lag, err := Measure(mctx, m.opts.Kafka, m.opts.Group, m.opts.Topics)
		cancel()
		m.mu.Lock()
		if err != nil {
			m.lag.Error = err.Error() // keep the last good numbers
		} else {
			lag.MeasuredAt = m.opts.Now().UnixMilli()
			m.lag = lag
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Status reads px:meta:{g} and px:cfg:{g} and adds the last lag measurement.
func (m *Monitor) Status(ctx context.Context) (Status, error) {
	keys := projections.Keys{Prefix: m.opts.KeyPrefix}
	var meta, cfg *redis.MapStringStringCmd
	if _, err := m.opts.RDB.TxPipelined(ctx, func(p redis.Pipeliner) error {
		meta = p.HGetAll(ctx, keys.Meta())
		cfg = p.HGetAll(ctx, fingerprint.Key(m.opts.KeyPrefix))
		return nil
	}); err != nil {
		return Status{}, fmt.Errorf("read consumer status: %w", err)
	}
	st := coord.Parse(meta.Val())
	s := Status{Projections: "missing", Holds: st.Holds.Names(), Rebuilding: []Rebuild{}, Consumers: []Consumer{}}
	if _, ok := st.Fields[coord.FieldStatus]; ok {
		s.Projections = st.Status
	}
	now := m.opts.Now().UnixMilli()
	for process, raw := range cfg.Val() {
		var p struct {
			AtMs int64 `json:"at_ms"`
		}
		_ = json.Unmarshal([]byte(raw), &p)
		c := Consumer{Process: process, LastSeen: p.AtMs, Alive: now-p.AtMs <= fingerprint.TTL.Milliseconds()}
		if c.Alive {
			s.Alive++
		}
		s.Consumers = append(s.Consumers, c)
	}
	s.Rebuilding = rebuilds(st, m.opts.Now())
	sort.Slice(s.Consumers, func(i, j int) bool { return s.Consumers[i].Process < s.Consumers[j].Process })
	m.mu.Lock()
	s.Lag = m.lag
	m.mu.Unlock()
	return s, nil
}
