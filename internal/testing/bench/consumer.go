package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Throughput is what a backlog phase measured, over the window from the
// first finished batch until every loaded record had an outcome.
type Throughput struct {
	Events  int64
	Elapsed time.Duration
	// Rate is Events / Elapsed.
	Rate float64
	// RedisCPU and ConsumerCPU are microseconds of CPU per event.
	RedisCPU, ConsumerCPU float64
	// KafkaCPU is the broker's (the JVM's) microseconds of CPU per event.
	KafkaCPU float64
	// ReplicaCPU is the replicas' microseconds of CPU per event (0 without replicas).
	ReplicaCPU float64
	// MeanBatch is the mean records per batch.
	MeanBatch float64
	// Commands are the Redis commandstats over the consumer's whole run of
	// Total events (the loaded log).
	Commands map[string]CommandStat
	Total    int64
	// ScriptCalls counts the apply script calls (projector_script_calls_total).
	ScriptCalls float64
}

// group is the consumer group of projector's consumer (the replayer uses it too).
const group = "projector"

// perEvent is the CPU per event and mean batch between two samples, over events.
func perEvent(first, last sample, events float64) (redis, consumer, kafka, replicas, batch float64) {
	us := func(a, b float64) float64 { return 1e6 * (b - a) / max(events, 1) }
	return us(first.redis, last.redis), us(first.consumer, last.consumer), us(first.kafka, last.kafka),
		us(first.replicas, last.replicas), (last.batched - first.batched) / max(last.batches-first.batches, 1)
}

// backlog waits until the running member m has finished the loaded log and
// its group has committed it, and measures its throughput, CPU per event
// and Redis commandstats (reset before m started).
func (e *env) backlog(ctx context.Context, m *member) (Throughput, error) {
	var th Throughput
	total := float64(e.cfg.Load.Events)
	e.logf("%s started; waiting for %d events", m.name, e.cfg.Load.Events)
	var first, last sample
	profiled := make(chan error, 1)
	lastLog := time.Now()
	for {
		select {
		case <-m.proc.Done():
			return th, fmt.Errorf("%s exited early; see %s", m.name, m.proc.LogPath)
		case <-ctx.Done():
			return th, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		s, err := e.sample(ctx, m)
		if err != nil {
			continue // not serving yet
		}
		if first.events == 0 && s.events > 0 {
			first = s
			go func() { profiled <- e.profile(ctx, m) }()
		}
		if time.Since(lastLog) > 5*time.Second {
			e.logf("%s: %.0f/%.0f events", m.name, s.events, total)
			lastLog = time.Now()
		}
		if s.events >= total {
			last = s
			break
		}
	}
	th.Events, th.Total = int64(last.events-first.events), int64(total)
	th.Elapsed = last.at.Sub(first.at)
	th.Rate = float64(th.Events) / th.Elapsed.Seconds()
	th.RedisCPU, th.ConsumerCPU, th.KafkaCPU, th.ReplicaCPU, th.MeanBatch = perEvent(first, last, float64(th.Events))
	var err error
	if m.scriptCalls != "" {
		if th.ScriptCalls, err = m.proc.Metric(ctx, m.scriptCalls, ""); err != nil {
			return th, err
		}
	}
	if th.Commands, err = e.redis.CommandStats(ctx); err != nil {
		return th, err
	}
	e.logf("%s: %d events in %v: %.0f ev/s, redis %.2f us/ev, consumer %.2f us/ev, kafka broker %.2f us/ev, replicas %.2f us/ev, mean batch %.0f",
		m.name, th.Events, th.Elapsed.Round(time.Millisecond), th.Rate, th.RedisCPU, th.ConsumerCPU, th.KafkaCPU, th.ReplicaCPU, th.MeanBatch)
	if err := e.waitLag(ctx, m, 30*time.Second); err != nil {
		return th, err
	}
	if mem, err := e.redis.UsedMemory(ctx); err == nil {
		e.logf("%s: redis used_memory %d MiB after the log", m.name, mem>>20)
	}
	if err := <-profiled; err != nil {
		e.logf("profile: %v", err)
	}
	return th, nil
}

// durationBounds are upper bounds (le) of projector_batch_duration_seconds buckets.
var durationBounds = []string{"0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "+Inf"}

// batchDurations reads the cumulative bucket counts of the consumer's batch durations.
func batchDurations(ctx context.Context, c *Proc) []float64 {
	out := make([]float64, len(durationBounds))
	for i, le := range durationBounds {
		out[i], _ = c.Metric(ctx, "projector_batch_duration_seconds_bucket", `le="`+le+`"`)
	}
	return out
}

// describeDurations says how many batches between two readings took up to
// each bound, e.g. "<=10ms 812, <=25ms 120, ...".
func describeDurations(before, after []float64) string {
	var parts []string
	prev := 0.0
	for i, le := range durationBounds {
		n := after[i] - before[i]
		parts = append(parts, fmt.Sprintf("<=%ss %.0f", le, n-prev))
		prev = n
	}
	return strings.Join(parts, ", ")
}
