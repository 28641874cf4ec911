// Package naive is the benchmark's baseline consumer: it applies each event
// the way the seed articles write it — an idempotency key taken with SET NX
// per event, then one round trip for every write the projections plan —
// without pipelines, batching or coalescing. Each write goes as one call of
// projector's apply script without markers (wire.Unguarded): the same
// rules and encoding as the appliers.
//
// It writes the same projection keys as internal/apply (it uses the same
// planner), but it is not exactly-once under crashes: an event whose SET NX
// succeeded and whose writes were interrupted is never completed. It exists
// only to be measured against.
package naive

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply/wire"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// Options configure an Applier.
type Options struct {
	// Window is how long after max(event time, now) the idempotency key lives.
	Window time.Duration
	// KeyPrefix is redis.key_prefix.
	KeyPrefix string
	// Now is the clock (writes that would already have expired are skipped).
	Now func() time.Time
}

// Applier applies events one command at a time.
type Applier struct {
	rdb     redis.UniversalClient
	sink    *wire.Unguarded
	planner *projections.Planner
	keys    projections.Keys
	opts    Options
	// Commands counts the Redis commands and script calls sent (one round trip each).
	Commands int64
}

// New returns an Applier writing through rdb.
func New(rdb redis.UniversalClient, planner *projections.Planner, opts Options) *Applier {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Applier{rdb: rdb, sink: wire.NewUnguarded(rdb), planner: planner, keys: projections.Keys{Prefix: opts.KeyPrefix}, opts: opts}
}

// IdempotencyKey is `px:nx:{u:<user>}:<id>`, the naive consumer's SET NX
// marker of one event (a bookkeeping key, so reference comparisons ignore it).
func (a *Applier) IdempotencyKey(ev *events.Event) string {
	return a.keys.User("px:nx", ev.UserID) + ":" + ev.ID
}

// Apply applies one event unless its idempotency key exists. It reports
// whether the event was applied (false: a duplicate).
func (a *Applier) Apply(ctx context.Context, ev events.Event) (bool, error) {
	now := a.opts.Now()
	exp := max(ev.TS, now.UnixMilli()) + a.opts.Window.Milliseconds()
	a.Commands++
	ok, err := a.rdb.SetArgs(ctx, a.IdempotencyKey(&ev), "1", redis.SetArgs{Mode: "NX", ExpireAt: time.UnixMilli(exp)}).Result()
	if err == redis.Nil {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("set idempotency key of %s: %w", ev.ID, err)
	}
	if ok != "OK" {
		return false, nil
	}
	for _, w := range a.planner.Plan(ev, now, nil) {
		a.Commands++
		if _, err := a.sink.Apply(ctx, [][]projections.Write{{w}}); err != nil {
			return true, fmt.Errorf("event %s: %s %s: %w", ev.ID, w.Kind, w.Key, err)
		}
	}
	return true, nil
}
