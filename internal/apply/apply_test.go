package apply

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"projector/internal/testing/applyfix"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// The shared fixtures (internal/testing/applyfix) under this package's names.
var (
	testNow   = applyfix.Now
	testDay   = applyfix.Day
	testMonth = applyfix.Month
	view      = applyfix.View
	batchAt   = applyfix.BatchAt
	mustGet   = applyfix.MustGet
)

func newTestApplier(t *testing.T, rdb redis.UniversalClient, cfg projections.Config) *Applier {
	t.Helper()
	return guardedApplier(t, rdb, cfg, Guards{})
}

// testOptions are the options of the tests' appliers: UTC, a day's window, testNow.
func testOptions() Options {
	return Options{Window: 24 * time.Hour, Location: time.UTC, Now: func() time.Time { return testNow }}
}

// guardedApplier returns an Applier with guards g over an initialised meta hash.
func guardedApplier(t *testing.T, rdb redis.UniversalClient, cfg projections.Config, g Guards) *Applier {
	t.Helper()
	p, err := projections.NewPlanner(cfg, time.UTC, "")
	if err != nil {
		t.Fatal(err)
	}
	a := New(rdb, p, testOptions(), g)
	if err := a.LoadScript(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := testMeta(rdb).Init(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return a
}

// testMeta is the Meta of the tests' appliers (with per-master evidence).
func testMeta(rdb redis.UniversalClient) *Meta {
	return NewMeta(rdb, "", func() time.Time { return testNow }, true)
}

func TestApplyOnceUnderRedeliveryAndDuplicates(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
	evs := []events.Event{
		view("e1", "u1", "p1", ts),
		view("e2", "u1", "p2", ts.Add(time.Second)),
		view("e1", "u1", "p1", ts), // duplicate publication inside the batch
		view("e3", "u2", "p1", ts.Add(2*time.Second)),
	}
	recs, ranges := batchAt(0, evs...)
	res, err := a.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	want := []Outcome{Applied, Applied, Duplicate, Applied}
	for i, o := range res.Outcomes {
		if o != want[i] {
			t.Errorf("outcome %d = %v, want %v", i, o, want[i])
		}
	}
	if got := mustGet(t, rdb, "st:{g}:views:"+testDay); got != "3" {
		t.Errorf("global views = %s, want 3", got)
	}
	// Redelivery of the same batch: skipped by the watermark, nothing changes.
	res, err = a.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range res.Outcomes {
		if o != Skipped {
			t.Errorf("redelivered outcome %d = %v, want Skipped", i, o)
		}
	}
	// Duplicate publication in a later batch (other offset).
	recs2, ranges2 := batchAt(10, view("e2", "u1", "p2", ts.Add(time.Second)), view("e4", "u1", "p3", ts.Add(3*time.Second)))
	res, err = a.Apply(ctx, recs2, ranges2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcomes[0] != Duplicate || res.Outcomes[1] != Applied {
		t.Errorf("outcomes = %v, want [Duplicate Applied]", res.Outcomes)
	}
	if got := mustGet(t, rdb, "st:{g}:views:"+testDay); got != "4" {
		t.Errorf("global views = %s, want 4", got)
	}
	if got := mustGet(t, rdb, "st:{u:u1}:views:"+testMonth); got != "3" {
		t.Errorf("u1 month views = %s, want 3", got)
	}
	lv, _ := rdb.ZRevRange(ctx, "lv:{u:u1}", 0, -1).Result()
	if fmt.Sprint(lv) != "[p3 p2 p1]" {
		t.Errorf("lv = %v", lv)
	}
}

// A crash after the user scripts and before the global script: the redelivery
// must apply the global effects exactly once and the user effects not again.
func TestApplyAfterCrashBetweenUserAndGlobal(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
	recs, ranges := batchAt(0, view("e1", "u1", "p1", ts), view("e2", "u2", "p1", ts))
	b := newBatch(recs, ranges)
	release := a.plan(b, nil)
	err := a.applyUsers(ctx, b)
	release()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, "st:{g}:views:2026").Result(); n != 0 {
		t.Fatal("global effects written by the user scripts")
	}
	// Redelivered as a larger batch with one more record.
	recs, ranges = batchAt(0, view("e1", "u1", "p1", ts), view("e2", "u2", "p1", ts), view("e3", "u1", "p2", ts))
	res, err := a.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range res.Outcomes {
		if o != Applied {
			t.Errorf("outcome %d = %v, want Applied", i, o)
		}
	}
	if got := mustGet(t, rdb, "st:{g}:views:2026"); got != "3" {
		t.Errorf("global views = %s, want 3", got)
	}
	if got := mustGet(t, rdb, "st:{u:u1}:views:2026"); got != "2" {
		t.Errorf("u1 views = %s, want 2", got)
	}
	if s, _ := rdb.ZScore(ctx, "pv:{g}:"+testDay, "p1").Result(); s != 2 {
		t.Errorf("pv p1 = %v, want 2", s)
	}
}

// The global watermark lies inside the redelivered range: only the rest counts.
func TestApplyPartialWatermark(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
	var evs []events.Event
	for i := 0; i < 6; i++ {
		evs = append(evs, view(fmt.Sprintf("e%d", i), fmt.Sprintf("u%d", i%2), "p1", ts))
	}
	recs, ranges := batchAt(0, evs[:3]...)
	if _, err := a.Apply(ctx, recs, ranges); err != nil {
		t.Fatal(err)
	}
	recs, ranges = batchAt(0, evs...)
	res, err := a.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcomes[0] != Skipped || res.Outcomes[5] != Applied {
		t.Errorf("outcomes = %v", res.Outcomes)
	}
	if got := mustGet(t, rdb, "st:{g}:views:2026"); got != "6" {
		t.Errorf("global views = %s, want 6", got)
	}
	if wm := rdb.HGet(ctx, "px:wm:{g}", "shop.views:0").Val(); wm != "5" {
		t.Errorf("watermark = %s, want 5", wm)
	}
}

// The script runs on the embedded Redis (miniredis) as well.
func TestApplyOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.SetTime(testNow)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
	order := events.Event{ID: "o1", Type: events.Order, TS: ts.UnixMilli(), UserID: "u1",
		Items: []events.Item{{ProductID: "p1", Quantity: 2, PriceCents: 150}, {ProductID: "p2", Quantity: 1, PriceCents: 0}}}
	clr := events.Event{ID: "c1", Type: events.HistoryCleared, TS: ts.Add(time.Second).UnixMilli(), UserID: "u1"}
	recs, ranges := batchAt(0, view("e1", "u1", "p1", ts), order, clr, view("e2", "u1", "p2", ts.Add(2*time.Second)))
	if _, err := a.Apply(context.Background(), recs, ranges); err != nil {
		t.Fatal(err)
	}
	if got := mr.HGet("px:wm:{g}", "shop.views:0"); got != "3" {
		t.Errorf("watermark = %q", got)
	}
	if got, _ := mr.Get("st:{g}:revenue_cents:" + testDay); got != "300" {
		t.Errorf("revenue = %q, want 300", got)
	}
	lv, _ := mr.ZMembers("lv:{u:u1}")
	if fmt.Sprint(lv) != "[p2]" {
		t.Errorf("lv = %v, want [p2] (p1 cleared)", lv)
	}
}

// Without the meta hash (Redis lost its data) a batch is not completed.
func TestApplyRefusesWithoutMeta(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	recs, ranges := batchAt(0, view("e1", "u1", "p1", testNow.Add(-time.Hour)))
	_, err := a.Apply(ctx, recs, ranges)
	var nr *NotReadyError
	if !errors.As(err, &nr) || nr.Status != "" {
		t.Fatalf("Apply after FLUSHALL: %v, want NotReadyError", err)
	}
	if n := rdb.Exists(ctx, "px:wm:{g}").Val(); n != 0 {
		t.Errorf("watermark written although Redis lost its data")
	}
}

// Removing product p7 from the history leaves product p7@b alone.
func TestHistoryItemRemovedMatchesWholeProduct(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
	rm := events.Event{ID: "r1", Type: events.HistoryItemRemoved, TS: ts.Add(time.Second).UnixMilli(), UserID: "u1", ProductID: "p7"}
	recs, ranges := batchAt(0, view("e1", "u1", "p7", ts), view("e2", "u1", "p7@b", ts), rm)
	if _, err := a.Apply(ctx, recs, ranges); err != nil {
		t.Fatal(err)
	}
	got, _ := rdb.ZRange(ctx, "hist:{u:u1}", 0, -1).Result()
	if fmt.Sprint(got) != "[p7@b@"+testDay+"]" {
		t.Errorf("history = %v, want only p7@b's entry", got)
	}
}

// TestDuplicatesAmongNewMarkers: a user group whose markers lie in two
// marker hashes (two days) holds new events and re-published ones. The
// script sets the new markers, finds the existing ones, deletes only the
// markers it set, and the group is applied again without the duplicates:
// the existing markers keep their first origin, and the day counters count
// each event once.
func TestDuplicatesAmongNewMarkers(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	day1, day2 := testNow.Add(-36*time.Hour), testNow.Add(-time.Hour)
	first := []events.Event{view("b", "u1", "p1", day1), view("d", "u1", "p2", day2)}
	recs, ranges := batchAt(0, first...)
	if _, err := a.Apply(ctx, recs, ranges); err != nil {
		t.Fatal(err)
	}
	evs := []events.Event{
		view("a", "u1", "p3", day1.Add(time.Second)), first[0], view("a2", "u1", "p4", day1.Add(2*time.Second)),
		view("c", "u1", "p5", day2.Add(time.Second)), first[1],
	}
	recs, ranges = batchAt(10, evs...)
	res, err := a.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	want := []Outcome{Applied, Duplicate, Applied, Applied, Duplicate}
	for i, o := range res.Outcomes {
		if o != want[i] {
			t.Errorf("outcome of %s = %v, want %v", evs[i].ID, o, want[i])
		}
	}
	for _, m := range []struct {
		day        time.Time
		id, origin string
	}{
		{day1, "b", "shop.views:0:0"}, {day2, "d", "shop.views:0:1"},
		{day1, "a", "shop.views:0:10"}, {day1, "a2", "shop.views:0:12"}, {day2, "c", "shop.views:0:13"},
	} {
		key := "px:seen:{u:u1}:" + m.day.Format("2006-01-02")
		if got := rdb.HGet(ctx, key, m.id).Val(); got != m.origin {
			t.Errorf("marker %s in %s = %q, want %q", m.id, key, got, m.origin)
		}
	}
	for _, c := range []struct {
		day  time.Time
		want string
	}{{day1, "3"}, {day2, "2"}} {
		if got := mustGet(t, rdb, "st:{u:u1}:views:"+c.day.Format("2006-01-02")); got != c.want {
			t.Errorf("views of %s = %s, want %s", c.day.Format("2006-01-02"), got, c.want)
		}
	}
}
