package apply

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/testredis"
	"projector/pkg/projections"
)

// rebuilder is a replayer's applier for stats alone in the given mode.
func rebuilder(t *testing.T, rdb redis.UniversalClient, mode RebuildMode) *Rebuilder {
	t.Helper()
	p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		t.Fatal(err)
	}
	return NewRebuilder(rdb, p, testOptions(), Selection{Only: map[string]bool{"stats": true}, WatermarkKey: "px:rwm:{g}"}, mode)
}

// TestRebuildModes: the consumers applied some batches (one only in part),
// stats were wiped, and a replayer rebuilds them: complete batches record by
// record by their markers (in memory where a marker expired), later records
// only where their own marker shows a consumer applied their user part.
func TestRebuildModes(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
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

	all := rebuilder(t, rdb, RebuildAll)
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
	marked := rebuilder(t, rdb, RebuildMarked)
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
	for user, n := range map[string]string{"u1": "2", "u5": "1", "u2": "1", "u3": "1"} {
		if got := mustGet(t, rdb, "st:{u:"+user+"}:views:"+day); got != n {
			t.Errorf("%s views %s, want %s", user, got, n)
		}
	}
	if n := rdb.Exists(ctx, "st:{u:u4}:views:"+day).Val(); n != 0 {
		t.Errorf("a record no consumer had reached was rebuilt")
	}
	if got := mustGet(t, rdb, "st:{g}:views:"+day); got != "3" {
		t.Errorf("global views %s, want 3 (the complete part only)", got)
	}
	if v, _ := rdb.HGet(ctx, "px:seen:{u:u4}:"+day, "e6").Result(); v != "" {
		t.Errorf("the replayer set a marker: %q", v)
	}
}
