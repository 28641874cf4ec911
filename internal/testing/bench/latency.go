package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"projector/internal/gen"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// LatencyConfig describes the steady-rate latency measurement.
type LatencyConfig struct {
	// Rate is the events per second produced (generated live traffic).
	Rate int
	// Duration is how long traffic is produced.
	Duration time.Duration
	// Warmup is the first part of Duration whose markers are not counted.
	Warmup time.Duration
	// Users and Products are the generator's population sizes.
	Users, Products int
	// Round numbers the rounds of steady-rate phases (-live-rounds), from 1:
	// each round's traffic has new event ids.
	Round int
	// KeyPrefix is redis.key_prefix.
	KeyPrefix string
}

// markerEvery is the interval between latency markers.
const markerEvery = 10 * time.Millisecond

// markerUser is the user whose views are the latency markers.
const markerUser = "bench-latency"

// marker is one marker view in flight.
type marker struct {
	ts    int64
	sent  time.Time
	count bool // sent after the warm-up
}

// Latencies are the measured event-to-visible latencies, sorted.
type Latencies []time.Duration

// Quantile returns the q-quantile (0..1), or 0 without samples.
func (l Latencies) Quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[min(int(q*float64(len(l))), len(l)-1)]
}

// MeasureLatency produces generated traffic at cfg.Rate with event times at
// the clock, plus every 10 ms a marker view of a dedicated user whose ts is
// the send time, and polls that user's last-viewed key every millisecond: a
// marker is visible once the key's highest score reaches its ts. The latency
// is the time from handing the marker to the producer to seeing it in Redis.
// A counted marker still not visible 30s after the last was produced is
// counted with its wait so far (a lower bound) and in unseen.
func MeasureLatency(ctx context.Context, p *kgo.Client, rdb redis.UniversalClient, cfg LatencyConfig) (lat Latencies, unseen int, err error) {
	var (
		mu      sync.Mutex
		pending []marker
		out     Latencies
	)
	key := projections.Keys{Prefix: cfg.KeyPrefix}.LastViewed(markerUser)
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	polled := make(chan error, 1)
	go func() {
		polled <- poll(pollCtx, rdb, key, func(top int64, now time.Time) {
			mu.Lock()
			defer mu.Unlock()
			for len(pending) > 0 && pending[0].ts <= top {
				if pending[0].count {
					out = append(out, now.Sub(pending[0].sent))
				}
				pending = pending[1:]
			}
		})
	}()
	start := time.Now()
	// Marker ids are unique per phase: a consumer with exactly-once would
	// drop another phase's ids as duplicates.
	phase := "lat-" + strconv.FormatInt(start.UnixMilli(), 36) + "-"
	var markers int64
	var markerFailed produceFailure
	err = producePaced(ctx, p, cfg, func(now time.Time, el time.Duration) error {
		if el < time.Duration(markers)*markerEvery {
			return nil
		}
		markers++
		ts := now.UnixMilli()
		v, err := events.Encode(events.Event{ID: phase + strconv.FormatInt(markers, 10), Type: events.View, TS: ts,
			UserID: markerUser, ProductID: "m" + strconv.FormatInt(markers, 10), Device: "-", StoreID: "-"})
		if err != nil {
			return fmt.Errorf("encode marker: %w", err)
		}
		mu.Lock()
		pending = append(pending, marker{ts: ts, sent: time.Now(), count: el >= cfg.Warmup})
		mu.Unlock()
		p.Produce(ctx, &kgo.Record{Topic: Topics[0], Key: []byte(markerUser), Value: v}, markerFailed.done)
		return nil
	})
	if err == nil {
		err = markerFailed.flush(ctx, p) // producePaced flushed them: their failure
	}
	if err != nil {
		return nil, 0, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		left := len(pending)
		mu.Unlock()
		if left == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopPoll()
	if err := <-polled; err != nil {
		return nil, 0, err
	}
	mu.Lock()
	defer mu.Unlock()
	now := time.Now()
	for _, m := range pending {
		if m.count {
			out = append(out, now.Sub(m.sent))
			unseen++
		}
	}
	slices.Sort(out)
	return out, unseen, nil
}

// producePaced produces generated traffic (seeded by rate and round, with
// event times at the clock) at cfg.Rate for cfg.Duration, calling each,
// when not nil, every millisecond with the time and the time elapsed, and
// waits until Kafka acknowledged every record.
func producePaced(ctx context.Context, p *kgo.Client, cfg LatencyConfig, each func(now time.Time, el time.Duration) error) error {
	gc := gen.DefaultConfig()
	gc.Seed, gc.Users, gc.Products = liveSeed(cfg.Rate, cfg.Round), cfg.Users, cfg.Products
	g := gen.New(gc)
	var failed produceFailure
	start := time.Now()
	var sent int64
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for now := range tick.C {
		el := now.Sub(start)
		if el >= cfg.Duration || ctx.Err() != nil {
			break
		}
		for target := int64(el.Seconds() * float64(cfg.Rate)); sent < target; sent++ {
			r := g.Next(now)
			p.Produce(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value}, failed.done)
		}
		if each != nil {
			if err := each(now, el); err != nil {
				return err
			}
		}
	}
	return failed.flush(ctx, p)
}

// poll reads the highest score of key every millisecond and reports it.
func poll(ctx context.Context, rdb redis.UniversalClient, key string, seen func(top int64, now time.Time)) error {
	for ctx.Err() == nil {
		top, err := rdb.ZRangeWithScores(ctx, key, -1, -1).Result()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("poll %s: %w", key, err)
		}
		if len(top) == 1 {
			seen(int64(top[0].Score), time.Now())
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// liveSeed is the generator's seed of the live traffic at rate in round
// (from 1): both consumers get the same traffic at one rate in one round,
// and no phase repeats the event ids (the generator's ids carry its seed) of
// a phase before it, which an exactly-once consumer would drop as
// duplicates, cheaply. The backlog's seeds are small (one per loader).
func liveSeed(rate, round int) uint64 { return 777 + uint64(rate) + 1_000_000*uint64(max(round, 1)-1) }
