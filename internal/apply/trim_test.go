package apply

import (
	"context"
	"fmt"
	"testing"
	"time"

	"projector/internal/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// TestSizeTrimAndSlidingExpiry (real Redis): a sized set is trimmed when a
// script call adds members, also when the call starts by re-viewing a member
// it already holds; a sliding expiry (lv: newest view + ttl) never moves
// earlier when an out-of-order older view comes in a later batch.
func TestSizeTrimAndSlidingExpiry(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	cfg := projections.Defaults()
	a := newTestApplier(t, rdb, cfg)
	key := projections.Keys{}.LastViewed("u1")
	base := testNow.Add(-2 * time.Hour)
	apply := func(first int64, evs ...events.Event) {
		t.Helper()
		recs, rng := batch(first, evs...)
		if _, err := a.Apply(ctx, recs, rng); err != nil {
			t.Fatal(err)
		}
	}
	var evs []events.Event
	for i := range 12 {
		evs = append(evs, view(fmt.Sprintf("e%d", i), "u1", fmt.Sprintf("p%d", i), base.Add(time.Duration(i)*time.Minute)))
	}
	apply(0, evs...)
	if n := rdb.ZCard(ctx, key).Val(); n != int64(cfg.LastViewed.Size) {
		t.Fatalf("%s holds %d members after 12 views, want %d", key, n, cfg.LastViewed.Size)
	}
	// A re-view of a member it holds, then a new product, in one call.
	newest := base.Add(time.Hour)
	apply(12, view("r1", "u1", "p11", base.Add(30*time.Minute)), view("r2", "u1", "p-new", newest))
	if n := rdb.ZCard(ctx, key).Val(); n != int64(cfg.LastViewed.Size) {
		t.Fatalf("%s holds %d members after a re-view and a new product, want %d", key, n, cfg.LastViewed.Size)
	}
	want := newest.UnixMilli() + cfg.LastViewed.TTL.Milliseconds()
	if got := rdb.PExpireTime(ctx, key).Val().Milliseconds(); got != want {
		t.Fatalf("expiry %d, want newest view + ttl %d", got, want)
	}
	// An older view, out of order, in a later batch: the expiry stays.
	apply(14, view("o1", "u1", "p-old", base.Add(-time.Hour)))
	if got := rdb.PExpireTime(ctx, key).Val().Milliseconds(); got != want {
		t.Fatalf("an out-of-order view moved the expiry to %d, want it kept at %d", got, want)
	}
}
