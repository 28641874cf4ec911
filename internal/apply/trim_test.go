package apply

import (
	"context"
	"fmt"
	"testing"
	"time"

	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// nextBatches returns a function that applies events as the next batch of
// one partition (consecutive offsets from 0).
func nextBatches(t *testing.T, a *Applier) func(evs ...events.Event) {
	off := int64(0)
	return func(evs ...events.Event) {
		t.Helper()
		recs, rng := batchAt(off, evs...)
		off += int64(len(evs))
		if _, err := a.Apply(context.Background(), recs, rng); err != nil {
			t.Fatal(err)
		}
	}
}

// viewsOf returns n views of user u, of products format%i, step apart from base.
func viewsOf(u string, n int, format string, base time.Time, step time.Duration) []events.Event {
	var evs []events.Event
	for i := range n {
		evs = append(evs, view(fmt.Sprintf("e%d", i), u, fmt.Sprintf(format, i), base.Add(time.Duration(i)*step)))
	}
	return evs
}

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
	apply := nextBatches(t, a)
	apply(viewsOf("u1", 12, "p%d", base, time.Minute)...)
	if n := rdb.ZCard(ctx, key).Val(); n != int64(cfg.LastViewed.Size) {
		t.Fatalf("%s holds %d members after 12 views, want %d", key, n, cfg.LastViewed.Size)
	}
	// A re-view of a member it holds, then a new product, in one call.
	newest := base.Add(time.Hour)
	apply(view("r1", "u1", "p11", base.Add(30*time.Minute)), view("r2", "u1", "p-new", newest))
	if n := rdb.ZCard(ctx, key).Val(); n != int64(cfg.LastViewed.Size) {
		t.Fatalf("%s holds %d members after a re-view and a new product, want %d", key, n, cfg.LastViewed.Size)
	}
	want := newest.UnixMilli() + cfg.LastViewed.TTL.Milliseconds()
	if got := rdb.PExpireTime(ctx, key).Val().Milliseconds(); got != want {
		t.Fatalf("expiry %d, want newest view + ttl %d", got, want)
	}
	// An older view, out of order, in a later batch: the expiry stays.
	apply(view("o1", "u1", "p-old", base.Add(-time.Hour)))
	if got := rdb.PExpireTime(ctx, key).Val().Milliseconds(); got != want {
		t.Fatalf("an out-of-order view moved the expiry to %d, want it kept at %d", got, want)
	}
}

// TestRetentionFollowsNewest (real Redis): a windowed set (lv, ttl = retention
// = 1h here) drops members older than its newest ts - 1h in every path of the
// script: a new key, a newer view (expiry moved: newest is that view, also
// after the top member was removed), an older view (expiry kept: trimmed by
// the top member when a member written lies below the window).
func TestRetentionFollowsNewest(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	cfg := projections.Defaults()
	cfg.LastViewed.TTL = time.Hour
	a := newTestApplier(t, rdb, cfg)
	a.opts.Now = time.Now // a 1-hour expiry must lie ahead of Redis's clock
	key := projections.Keys{}.LastViewed("u1")
	base := time.Now().Add(-30 * time.Minute)
	apply := nextBatches(t, a)
	check := func(step string, want ...string) {
		t.Helper()
		got, err := rdb.ZRange(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: %s = %v, want %v", step, key, got, want)
		}
	}
	// a new key: p0 is older than newest (p2) - 1h
	apply(view("e0", "u1", "p0", base.Add(-11*time.Minute)), view("e1", "u1", "p1", base), view("e2", "u1", "p2", base.Add(50*time.Minute)))
	check("new key", "p1", "p2")
	// an older view, out of order, beyond the retention: removed at once
	apply(view("e3", "u1", "p3", base.Add(-20*time.Minute)))
	check("older view", "p1", "p2")
	// the top member removed: an older view is trimmed by the top member then
	// (p1 at base), so p4 (base-15m) stays; the expiry stays at base+50m+1h
	rm := events.Event{ID: "r1", Type: events.HistoryItemRemoved, TS: base.Add(51 * time.Minute).UnixMilli(), UserID: "u1", ProductID: "p2"}
	apply(rm)
	check("top removed", "p1")
	apply(view("e4", "u1", "p4", base.Add(-15*time.Minute)), view("e5", "u1", "p5", base.Add(-5*time.Minute)))
	check("older view after removal", "p4", "p5", "p1")
	// a newer view moves the expiry and the window: p5 and p1 fall out
	apply(view("e6", "u1", "p6", base.Add(70*time.Minute)))
	check("newer view", "p6")
	want := base.Add(70*time.Minute).UnixMilli() + time.Hour.Milliseconds()
	if got := rdb.PExpireTime(ctx, key).Val().Milliseconds(); got != want {
		t.Fatalf("expiry %d, want newest + ttl %d", got, want)
	}
}

// TestManyMembersInOneCall (real Redis): one call adding more members to a
// set than one ZADD takes from the script (1,200 views of one user) keeps
// exactly the newest ones.
func TestManyMembersInOneCall(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	cfg := projections.Defaults()
	a := newTestApplier(t, rdb, cfg)
	base := testNow.Add(-2 * time.Hour)
	nextBatches(t, a)(viewsOf("u1", 1200, "p%04d", base, time.Second)...)
	for key, size := range map[string]int{"lv:{u:u1}": cfg.LastViewed.Size, "hist:{u:u1}": cfg.History.Size} {
		got, err := rdb.ZRange(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != size || got[0][:5] != fmt.Sprintf("p%04d", 1200-size) || got[size-1][:5] != "p1199" {
			t.Fatalf("%s holds %d members from %v to %v, want the newest %d (p%04d to p1199)", key, len(got), got[0], got[len(got)-1], size, 1200-size)
		}
	}
}

// TestLoweredLifetimeKeepsLiveMembers (real Redis): after last_viewed.ttl is
// lowered (2h -> 1h), a key still expires at newest + 2h; an older view must
// not make the script take that expiry - 1h as the newest ts and trim live
// members away.
func TestLoweredLifetimeKeepsLiveMembers(t *testing.T) {
	srv := testredis.StartStandalone(t)
	rdb := srv.Client()
	key := projections.Keys{}.LastViewed("u1")
	base := time.Now().Add(-30 * time.Minute)
	for _, ttl := range []time.Duration{2 * time.Hour, time.Hour} {
		cfg := projections.Defaults()
		cfg.LastViewed.TTL = ttl
		a := newTestApplier(t, rdb, cfg)
		a.opts.Now = time.Now
		if ttl == 2*time.Hour {
			nextBatches(t, a)(view("e1", "u1", "p1", base), view("e2", "u1", "p2", base.Add(10*time.Minute)))
			continue
		}
		recs, rng := batchAt(2, view("e3", "u1", "p3", base.Add(-5*time.Minute)))
		if _, err := a.Apply(context.Background(), recs, rng); err != nil {
			t.Fatal(err)
		}
	}
	got, err := rdb.ZRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[p3 p1 p2]" {
		t.Fatalf("%s = %v after an older view under a lowered ttl, want [p3 p1 p2]", key, got)
	}
}
