package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Live is what one steady-rate phase measured of one consumer.
type Live struct {
	// Rate is the events per second produced.
	Rate int
	// Latency holds the event-to-visible latencies of the markers.
	Latency Latencies
	// Unseen counts the markers not visible 30s after production ended
	// (in Latency with their wait so far, a lower bound).
	Unseen int
	// CaughtUp is false when the group still lagged 2 minutes after
	// production ended (the CPU figures then cover what was done).
	CaughtUp bool
	// Events is the records the consumer finished during the phase.
	Events float64
	// RedisCPU and ConsumerCPU are microseconds of CPU per event, from the
	// start of production until the group had committed everything.
	RedisCPU, ConsumerCPU float64
	// KafkaCPU and LoadCPU are the broker's and the load generator's (this
	// process: producer and latency probe) microseconds of CPU per event.
	KafkaCPU, LoadCPU float64
	// BusyCores is how many of the machine's CPUs were busy on average.
	BusyCores float64
	// MeanBatch is the mean records per batch.
	MeanBatch float64
	// LagStart and LagEnd are the group's lag (records) once the warm-up
	// is over and just before production stops.
	LagStart, LagEnd int64
	// Commands are the Redis commandstats over the phase (reset at its
	// start), for Events events.
	Commands map[string]CommandStat
}

// LagGrows reports whether the lag at the end of production exceeds the lag
// at its start by more than half a second of traffic: the consumer falls
// behind the rate.
func (l Live) LagGrows() bool { return l.LagEnd-l.LagStart > int64(l.Rate/2) }

// String is the phase as a log line.
func (l Live) String() string {
	verdict := "no growing lag"
	if l.LagGrows() {
		verdict = "growing lag"
	}
	if !l.CaughtUp {
		verdict += ", not caught up 2 min after production"
	}
	return fmt.Sprintf("%d ev/s: %d markers (%d unseen after 30s), p50 %v p99 %v max %v; redis %.2f us/ev, consumer %.2f us/ev, "+
		"kafka broker %.2f us/ev, load generator %.2f us/ev, machine %.2f cores busy; mean batch %.1f; lag %d -> %d (%s)",
		l.Rate, len(l.Latency), l.Unseen, l.Latency.Quantile(0.5).Round(100*time.Microsecond), l.Latency.Quantile(0.99).Round(100*time.Microsecond),
		l.Latency.Quantile(1).Round(100*time.Microsecond), l.RedisCPU, l.ConsumerCPU, l.KafkaCPU, l.LoadCPU, l.BusyCores,
		l.MeanBatch, l.LagStart, l.LagEnd, verdict)
}

// live produces generated traffic at rate while m runs caught up with the
// log, and measures the latency, CPU per event, batch sizes and lag.
func (e *env) live(ctx context.Context, m *member, p *kgo.Client, rate int) (Live, error) {
	l := Live{Rate: rate}
	lc := e.cfg.Latency
	lc.Rate, lc.Round = rate, e.round
	e.logf("%s: live %d ev/s for %v", m.name, rate, lc.Duration)
	if err := e.redis.ResetStats(ctx); err != nil {
		return l, err
	}
	before, err := e.sample(ctx, m)
	if err != nil {
		return l, err
	}
	var durations []float64
	if m.scriptCalls != "" {
		durations = batchDurations(ctx, m.proc)
	}
	lags := make(chan [2]int64, 1)
	go func() { lags <- e.lagAt(ctx, m, time.Now(), lc.Warmup, lc.Duration-250*time.Millisecond) }()
	profiled := make(chan error, 1)
	go func() { profiled <- e.profileAs(ctx, m, fmt.Sprintf("%s-live%d", m.name, rate)) }()
	if l.Latency, l.Unseen, err = MeasureLatency(ctx, p, e.redis.Client(), lc); err != nil {
		return l, err
	}
	if err := e.waitLag(ctx, m, 2*time.Minute); err != nil {
		e.logf("%s: %v", m.name, err)
	} else {
		l.CaughtUp = true
	}
	after, err := e.sample(ctx, m)
	if err != nil {
		return l, err
	}
	if l.Commands, err = e.redis.CommandStats(ctx); err != nil {
		return l, err
	}
	lag := <-lags
	l.LagStart, l.LagEnd = lag[0], lag[1]
	if err := <-profiled; err != nil {
		e.logf("%s: live profile: %v", m.name, err)
	}
	l.Events = after.events - before.events
	l.RedisCPU, l.ConsumerCPU, l.KafkaCPU, _, l.MeanBatch = perEvent(before, after, l.Events)
	l.LoadCPU = 1e6 * (after.self - before.self) / max(l.Events, 1)
	l.BusyCores = busyCores(before.idle, after.idle, after.at.Sub(before.at), runtime.NumCPU())
	e.logf("%s: live %v", m.name, l)
	if durations != nil {
		e.logf("%s: batches by duration: %s", m.name, describeDurations(durations, batchDurations(ctx, m.proc)))
	}
	return l, nil
}

// lagAt reads m's group lag at start+first and start+second (-1 when it
// cannot be read).
func (e *env) lagAt(ctx context.Context, m *member, start time.Time, first, second time.Duration) [2]int64 {
	out := [2]int64{-1, -1}
	for i, at := range []time.Duration{first, second} {
		select {
		case <-ctx.Done():
			return out
		case <-time.After(time.Until(start.Add(at))):
		}
		if lag, err := e.kafka.Lag(ctx, m.group, Topics); err == nil {
			out[i] = lag
		}
	}
	return out
}
