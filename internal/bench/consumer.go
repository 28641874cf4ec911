package bench

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Throughput is what the consumer phase measured, over the window from the
// first applied batch until every loaded record had an outcome.
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
	// Commands are the Redis commandstats over the consumer's whole run of
	// Total events (the loaded log).
	Commands map[string]CommandStat
	Total    int64
	// ScriptCalls counts the apply script calls (projector_script_calls_total).
	ScriptCalls float64
}

// group is the consumer group of the measured consumer (the replayer uses it too).
const group = "projector"

// sample is one observation of the running consumer.
type sample struct {
	at                     time.Time
	events                 float64
	redis, consumer, kafka float64
	replicas               float64
}

func (e *env) sample(ctx context.Context, c *Proc) (sample, error) {
	s := sample{at: time.Now()}
	var err error
	if s.events, err = c.Metric(ctx, "projector_events_total", ""); err != nil {
		return s, err
	}
	if s.redis, err = e.redis.CPUSeconds(ctx); err != nil {
		return s, err
	}
	if s.kafka, err = e.kafka.CPUSeconds(); err != nil {
		return s, err
	}
	if s.replicas, err = e.redis.ReplicaCPUSeconds(ctx); err != nil {
		return s, err
	}
	s.consumer, err = c.CPUSeconds()
	return s, err
}

// runConsumer runs the consumer binary over the loaded log, then (when
// configured) measures latency under steady traffic, and stops it.
func (e *env) runConsumer(ctx context.Context, p *kgo.Client) (Throughput, Latencies, error) {
	var th Throughput
	port, err := freePort(false)
	if err != nil {
		return th, nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := e.redis.ResetStats(ctx); err != nil {
		return th, nil, err
	}
	c, err := Start(e.consumer, nil, Env(e.kafka.Addr(), e.redis, addr, e.cfg.ConsumerEnv...), filepath.Join(e.cfg.Dir, "consumer.log"))
	if err != nil {
		return th, nil, err
	}
	defer func() {
		c.Stop()
		e.logf("consumer: peak RSS %d MiB", c.PeakRSS()>>20)
	}()
	c.MetricsURL = "http://" + addr + "/metrics"
	total := float64(e.cfg.Load.Events)
	e.logf("consumer started; waiting for %d events", e.cfg.Load.Events)
	var first, last sample
	profiled := make(chan error, 1)
	lastLog := time.Now()
	for {
		select {
		case <-c.Done():
			return th, nil, fmt.Errorf("consumer exited early; see %s", c.LogPath)
		case <-ctx.Done():
			return th, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		s, err := e.sample(ctx, c)
		if err != nil {
			continue // not serving yet
		}
		if first.events == 0 && s.events > 0 {
			first = s
			go func() { profiled <- e.profile(ctx, addr) }()
		}
		if time.Since(lastLog) > 5*time.Second {
			e.logf("consumer: %.0f/%.0f events", s.events, total)
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
	th.RedisCPU = 1e6 * (last.redis - first.redis) / float64(th.Events)
	th.ConsumerCPU = 1e6 * (last.consumer - first.consumer) / float64(th.Events)
	th.KafkaCPU = 1e6 * (last.kafka - first.kafka) / float64(th.Events)
	th.ReplicaCPU = 1e6 * (last.replicas - first.replicas) / float64(th.Events)
	if th.ScriptCalls, err = c.Metric(ctx, "projector_script_calls_total", ""); err != nil {
		return th, nil, err
	}
	if th.Commands, err = e.redis.CommandStats(ctx); err != nil {
		return th, nil, err
	}
	e.logf("consumer: %d events in %v: %.0f ev/s, redis %.2f us/ev, consumer %.2f us/ev, kafka broker %.2f us/ev, replicas %.2f us/ev",
		th.Events, th.Elapsed.Round(time.Millisecond), th.Rate, th.RedisCPU, th.ConsumerCPU, th.KafkaCPU, th.ReplicaCPU)
	if err := e.waitLag(ctx); err != nil {
		return th, nil, err
	}
	if mem, err := e.redis.UsedMemory(ctx); err == nil {
		e.logf("consumer: redis used_memory %d MiB after the log", mem>>20)
	}
	if err := <-profiled; err != nil {
		e.logf("profile: %v", err)
	}
	var lat Latencies
	if e.cfg.Latency.Rate > 0 {
		e.logf("latency: %d ev/s for %v", e.cfg.Latency.Rate, e.cfg.Latency.Duration)
		before := batchDurations(ctx, c)
		if lat, err = MeasureLatency(ctx, p, e.redis.Client(), e.cfg.Latency); err != nil {
			return th, nil, err
		}
		e.logf("latency: %d markers, p50 %v p99 %v max %v", len(lat), lat.Quantile(0.5), lat.Quantile(0.99), lat.Quantile(1))
		e.logf("latency: consumer batches by duration: %s", describeDurations(before, batchDurations(ctx, c)))
	}
	return th, lat, nil
}

// waitLag waits until the group has committed everything.
func (e *env) waitLag(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		lag, err := e.kafka.Lag(ctx, group, Topics)
		if err == nil && lag == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("group lag still %d (%v) 30s after every event was applied", lag, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// profile saves a CPU profile of the consumer when configured.
func (e *env) profile(ctx context.Context, addr string) error {
	if e.cfg.ProfileSeconds <= 0 {
		return nil
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, e.cfg.ProfileSeconds)
	return Fetch(ctx, url, filepath.Join(e.cfg.Dir, "consumer.pprof"))
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
