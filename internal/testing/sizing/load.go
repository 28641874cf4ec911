package sizing

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply"
	"projector/internal/gen"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// Scenario is the traffic to apply: Users users producing EventsPerUserDay
// records a day on average for Days days, ending at the clock.
type Scenario struct {
	Users, Products  int
	Days             int
	EventsPerUserDay int
	Seed             uint64
	// Batch is the number of records per Apply call (batch.max_events).
	Batch int
	// Window is idempotency.window (0: 24h).
	Window time.Duration
	// UUIDs makes event ids 36-character UUIDs (gen.Config.UUIDs).
	UUIDs bool
}

// window is the scenario's idempotency.window.
func (s Scenario) window() time.Duration {
	if s.Window <= 0 {
		return 24 * time.Hour
	}
	return s.Window
}

// Records is the size of the scenario's log.
func (s Scenario) Records() int { return s.Users * s.EventsPerUserDay * s.Days }

// Applied counts what Load did.
type Applied struct {
	// Records is the generated log's size; Poison of them were not decoded.
	Records, Poison int
	// Events were applied; Duplicates were recognised by their markers.
	Events, Duplicates int
	// Users is the number of distinct users among applied events.
	Users int
}

// Load generates the scenario's log with event times in the Days*24h before
// now and applies it to rdb with projections.Defaults() in UTC and the
// scenario's idempotency window, exactly as a consumer does (same planner, applier and
// apply script), one partition, Batch records at a time.
func Load(ctx context.Context, rdb redis.UniversalClient, sc Scenario, now time.Time) (Applied, error) {
	planner, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		return Applied{}, fmt.Errorf("planner: %w", err)
	}
	clock := func() time.Time { return now }
	a := apply.New(rdb, planner, apply.Options{Window: sc.window(), Location: time.UTC, Now: clock}, apply.Guards{})
	if err := a.LoadScript(ctx); err != nil {
		return Applied{}, err
	}
	if _, err := apply.NewMeta(rdb, "", clock, false).Init(ctx, nil); err != nil {
		return Applied{}, fmt.Errorf("init meta: %w", err)
	}
	recs, out := decodeLog(sc, now)
	users := map[string]bool{}
	for i := 0; i < len(recs); i += sc.Batch {
		part := recs[i:min(i+sc.Batch, len(recs))]
		rng := []apply.Range{{Topic: part[0].Topic, First: part[0].Offset, Last: part[len(part)-1].Offset}}
		res, err := a.Apply(ctx, part, rng)
		if err != nil {
			return Applied{}, fmt.Errorf("apply records %d..%d: %w", i, i+len(part)-1, err)
		}
		for j, o := range res.Outcomes {
			switch o {
			case apply.Applied:
				out.Events++
				users[part[j].Event.UserID] = true
			case apply.Duplicate:
				out.Duplicates++
			}
		}
	}
	out.Users = len(users)
	return out, nil
}

// decodeLog generates the scenario's log and decodes it onto consecutive
// offsets of one partition, leaving poison records out.
func decodeLog(sc Scenario, now time.Time) ([]apply.Record, Applied) {
	span := time.Duration(sc.Days) * projections.Day
	gc := gen.DefaultConfig()
	gc.Seed, gc.Users, gc.Products, gc.UUIDs = sc.Seed, sc.Users, sc.Products, sc.UUIDs
	gc.Start, gc.Span = now.Add(-span), span-time.Minute
	log := gen.New(gc).Log(sc.Records())
	out := Applied{Records: len(log)}
	recs := make([]apply.Record, 0, len(log))
	for i, r := range log {
		ev, err := events.Decode(r.Value)
		if err != nil {
			out.Poison++
			continue
		}
		recs = append(recs, apply.Record{Topic: "shop.views", Offset: int64(i), Event: ev})
	}
	return recs, out
}
