package apply

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/coord"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// rebuilder is a replayer's applier for stats alone in the given mode.
func rebuilder(t *testing.T, rdb redis.UniversalClient, mode RebuildMode, tag string) *Rebuilder {
	t.Helper()
	p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		t.Fatal(err)
	}
	return NewRebuilder(rdb, p, testOptions(), Selection{Only: map[string]bool{"stats": true}, WatermarkKey: "px:rwm:{g}", Tag: tag}, mode)
}

// consumerFixture is a fresh server and a consumer's applier on it, an
// event time an hour before testNow and its day.
func consumerFixture(t *testing.T) (context.Context, *redis.Client, *Applier, time.Time, string) {
	t.Helper()
	rdb := testredis.StartStandalone(t).Client()
	ts := testNow.Add(-time.Hour)
	return context.Background(), rdb, newTestApplier(t, rdb, projections.Defaults()), ts, ts.Format("2006-01-02")
}

// TestRebuildModes: the consumers applied some batches (one only in part),
// stats were wiped, and a replayer rebuilds them: complete batches record by
// record by their markers (a tagged marker is set where one expired), later
// records only where their own marker shows a consumer applied their user
// part. A batch applied again (a resumed rebuild) writes no user write
// twice; a later rebuild (another tag) takes the tagged marker as applied.
func TestRebuildModes(t *testing.T) {
	ctx, rdb, a, ts, day := consumerFixture(t)
	e1 := view("e1", "u1", "p1", ts)
	e7 := view("e7", "u5", "p1", ts)
	recs, ranges := batchAt(0, e1, view("e2", "u1", "p2", ts), e1, e7)
	if _, err := a.Apply(ctx, recs, ranges); err != nil {
		t.Fatal(err)
	}
	rdb.HDel(ctx, "px:seen:{u:u5}:"+day, "e7") // e7's marker expired
	recs, ranges = batchAt(5, view("e4", "u2", "p1", ts), view("e5", "u3", "p1", ts))
	if _, err := a.Apply(ctx, recs, ranges); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, "px:wm:{g}", "shop.views:0", 4) // as if the second batch's global part never ran
	keys, _ := rdb.Keys(ctx, "st:*").Result()
	rdb.Del(ctx, keys...)

	all := rebuilder(t, rdb, RebuildAll, "T1")
	recs, ranges = batchAt(0, e1, view("e2", "u1", "p2", ts), e1, e7, e7)
	res, err := all.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	want := []Outcome{Applied, Applied, Duplicate, Applied, Duplicate}
	for i, o := range res.Outcomes {
		if o != want[i] {
			t.Errorf("complete part: outcome %d = %v, want %v", i, o, want[i])
		}
	}
	marked := rebuilder(t, rdb, RebuildMarked, "T1")
	recs, ranges = batchAt(5, view("e4", "u2", "p1", ts), view("e5", "u3", "p1", ts), view("e6", "u4", "p1", ts), e1)
	res, err = marked.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	want = []Outcome{Applied, Applied, Skipped, Duplicate}
	for i, o := range res.Outcomes {
		if o != want[i] {
			t.Errorf("marked part: outcome %d = %v, want %v", i, o, want[i])
		}
	}
	views := map[string]string{"u1": "2", "u5": "1", "u2": "1", "u3": "1"}
	checkViews := func(when string) {
		t.Helper()
		for user, n := range views {
			if got := mustGet(t, rdb, "st:{u:"+user+"}:views:"+day); got != n {
				t.Errorf("%s: %s views %s, want %s", when, user, got, n)
			}
		}
	}
	checkViews("rebuilt")
	if got := mustGet(t, rdb, "st:{g}:views:"+day); got != "3" {
		t.Errorf("global views %s, want 3 (the complete part only)", got)
	}
	if v := rdb.HGet(ctx, "px:seen:{u:u5}:"+day, "e7").Val(); v != "shop.views:0:3~T1" {
		t.Errorf("marker of the record whose marker expired: %q, want it tagged with the rebuild", v)
	}

	// killed before the global call: the same batches again apply each user write once
	rdb.Del(ctx, "px:rwm:{g}", "st:{g}:views:"+day)
	for _, step := range []struct {
		a     *Rebuilder
		first int64
		evs   []events.Event
	}{{rebuilder(t, rdb, RebuildAll, "T1"), 0, []events.Event{e1, view("e2", "u1", "p2", ts), e1, e7, e7}},
		{rebuilder(t, rdb, RebuildMarked, "T1"), 5, []events.Event{view("e4", "u2", "p1", ts), view("e5", "u3", "p1", ts)}}} {
		recs, ranges = batchAt(step.first, step.evs...)
		if _, err := step.a.Apply(ctx, recs, ranges); err != nil {
			t.Fatal(err)
		}
	}
	checkViews("resumed")
	// a later rebuild takes the first one's markers as records applied
	keys, _ = rdb.Keys(ctx, "st:{u:*").Result()
	keys2, _ := rdb.Keys(ctx, "px:rwm:*").Result()
	rdb.Del(ctx, append(keys, keys2...)...)
	recs, ranges = batchAt(0, e1, view("e2", "u1", "p2", ts), e1, e7, e7)
	if _, err := rebuilder(t, rdb, RebuildAll, "T2").Apply(ctx, recs, ranges); err != nil {
		t.Fatal(err)
	}
	views = map[string]string{"u1": "2", "u5": "1"}
	checkViews("rebuilt again")
	if n := rdb.Exists(ctx, "st:{u:u4}:views:"+day).Val(); n != 0 {
		t.Errorf("a record no consumer had reached was rebuilt")
	}
	if v, _ := rdb.HGet(ctx, "px:seen:{u:u4}:"+day, "e6").Result(); v != "" {
		t.Errorf("the replayer set a marker after the consumers' watermarks: %q", v)
	}
	if got := mustGet(t, rdb, "st:{g}:views:"+day); got != "6" {
		t.Errorf("global views %s after the resumed and the second rebuild, want 6 (3 each: the complete part only)", got)
	}
}

// TestHoldLeavesUserWritesOut: a consumer leaves a held projection's user
// writes out, and a pause stops it only while the replayer's lease stands.
func TestHoldLeavesUserWritesOut(t *testing.T) {
	ctx, rdb, a, ts, day := consumerFixture(t)
	rdb.HSet(ctx, "px:meta:{g}", coord.HoldField("last_viewed"), coord.HoldAll)
	recs, ranges := batchAt(0, view("e1", "u1", "p1", ts))
	if _, err := a.Apply(ctx, recs, ranges); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, "lv:{u:u1}").Val(); n != 0 {
		t.Errorf("the held projection last_viewed was written")
	}
	if got := mustGet(t, rdb, "st:{u:u1}:views:"+day); got != "1" {
		t.Errorf("stats (not held) views %s, want 1", got)
	}
	rdb.HSet(ctx, "px:meta:{g}", "status", coord.StatusPaused, coord.FieldPause, "tok")
	rdb.Set(ctx, "px:lease:{g}", "replayer", time.Minute)
	recs, ranges = batchAt(1, view("e2", "u1", "p2", ts))
	var nr *NotReadyError
	if _, err := a.Apply(ctx, recs, ranges); !errors.As(err, &nr) {
		t.Fatalf("paused with the replayer's lease: err %v, want a NotReadyError", err)
	}
	rdb.Del(ctx, "px:lease:{g}")
	if _, err := a.Apply(ctx, recs, ranges); err != nil {
		t.Fatalf("paused by a replayer whose lease is gone: %v", err)
	}
	if got := mustGet(t, rdb, "st:{u:u1}:views:"+day); got != "2" {
		t.Errorf("views %s after the pause lost its lease, want 2", got)
	}
}

// TestTaggedMarkerIsTheRecordsOwn: a consumer that meets a marker a rebuild
// set for the very record it applies (origin~tag, Repair after a rollback)
// counts the record as applied before, not as a duplicate, and writes
// nothing again.
func TestTaggedMarkerIsTheRecordsOwn(t *testing.T) {
	ctx, rdb, a, ts, day := consumerFixture(t)
	recs, ranges := batchAt(0, view("e1", "u1", "p1", ts))
	if _, err := a.Apply(ctx, recs, ranges); err != nil {
		t.Fatal(err)
	}
	marker := "px:seen:{u:u1}:" + day
	origin := rdb.HGet(ctx, marker, "e1").Val()
	rdb.HSet(ctx, marker, "e1", origin+tagSep+"T1")
	res, err := a.Repair(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcomes[0] != Applied {
		t.Errorf("outcome with the record's own tagged marker = %v, want Applied", res.Outcomes[0])
	}
	if got := mustGet(t, rdb, "st:{u:u1}:views:2026"); got != "1" {
		t.Errorf("u1 views = %s after the repair, want 1 (nothing applied twice)", got)
	}
}
