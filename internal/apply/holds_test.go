package apply

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/coord"
	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// TestHoldLeavesUserWritesOut: a consumer leaves the user writes of a held
// projection out and applies the others; it applies nothing while a
// replayer holding the lease paused it, and goes on once the lease is gone.
func TestHoldLeavesUserWritesOut(t *testing.T) {
	ctx, rdb, a, ts, day := fixture(t)
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
	ctx, rdb, a, ts, day := fixture(t)
	recs, ranges := batchAt(0, view("e1", "u1", "p1", ts))
	if _, err := a.Apply(ctx, recs, ranges); err != nil {
		t.Fatal(err)
	}
	marker := "px:seen:{u:u1}:" + day
	origin := rdb.HGet(ctx, marker, "e1").Val()
	rdb.HSet(ctx, marker, "e1", origin+TagSep+"T1")
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

// fixture is a fresh server and a consumer's applier on it, an event time
// an hour before testNow and its day.
func fixture(t *testing.T) (context.Context, redis.UniversalClient, *Applier, time.Time, string) {
	t.Helper()
	rdb := testredis.StartStandalone(t).Client()
	ts := testNow.Add(-time.Hour)
	return context.Background(), rdb, newTestApplier(t, rdb, projections.Defaults()), ts, ts.Format("2006-01-02")
}
