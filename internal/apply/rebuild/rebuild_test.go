package rebuild

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply"
	"projector/internal/testing/applyfix"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// rebuilder is a replayer's applier for stats alone in the given mode.
func rebuilder(t *testing.T, rdb redis.UniversalClient, mode Mode, tag string) *Rebuilder {
	t.Helper()
	p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		t.Fatal(err)
	}
	return NewRebuilder(rdb, p, testOptions(), Selection{Only: map[string]bool{"stats": true}, WatermarkKey: "px:rwm:{g}", Tag: tag}, mode)
}

// consumer is a consumer's applier on rdb, over an initialised meta hash.
func consumer(t *testing.T, rdb redis.UniversalClient) *apply.Applier {
	t.Helper()
	p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.NewMeta(rdb, "", testOptions().Now, true).Init(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return apply.New(rdb, p, testOptions(), apply.Guards{})
}

// testOptions are the options of the tests' appliers: UTC, a day's window, testNow.
func testOptions() apply.Options {
	return apply.Options{Window: 24 * time.Hour, Location: time.UTC, Now: func() time.Time { return testNow }}
}

// The shared fixtures (internal/testing/applyfix) under this package's names.
var (
	testNow = applyfix.Now
	view    = applyfix.View
	batchAt = applyfix.BatchAt
	mustGet = applyfix.MustGet
)

// TestRebuildModes: the consumers applied some batches (one only in part),
// stats were wiped, and a replayer rebuilds them: complete batches record by
// record by their markers (a tagged marker is set where one expired), later
// records only where their own marker shows a consumer applied their user
// part. A batch applied again (a resumed rebuild) writes no user write
// twice; a later rebuild (another tag) takes the tagged marker as applied.
func TestRebuildModes(t *testing.T) {
	ctx, rdb := context.Background(), testredis.StartStandalone(t).Client()
	a, ts := consumer(t, rdb), testNow.Add(-time.Hour)
	day := ts.Format("2006-01-02")
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

	all := rebuilder(t, rdb, All, "T1")
	recs, ranges = batchAt(0, e1, view("e2", "u1", "p2", ts), e1, e7, e7)
	res, err := all.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	want := []apply.Outcome{apply.Applied, apply.Applied, apply.Duplicate, apply.Applied, apply.Duplicate}
	for i, o := range res.Outcomes {
		if o != want[i] {
			t.Errorf("complete part: outcome %d = %v, want %v", i, o, want[i])
		}
	}
	marked := rebuilder(t, rdb, Marked, "T1")
	recs, ranges = batchAt(5, view("e4", "u2", "p1", ts), view("e5", "u3", "p1", ts), view("e6", "u4", "p1", ts), e1)
	res, err = marked.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	want = []apply.Outcome{apply.Applied, apply.Applied, apply.Skipped, apply.Duplicate}
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
	}{{rebuilder(t, rdb, All, "T1"), 0, []events.Event{e1, view("e2", "u1", "p2", ts), e1, e7, e7}},
		{rebuilder(t, rdb, Marked, "T1"), 5, []events.Event{view("e4", "u2", "p1", ts), view("e5", "u3", "p1", ts)}}} {
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
	if _, err := rebuilder(t, rdb, All, "T2").Apply(ctx, recs, ranges); err != nil {
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
