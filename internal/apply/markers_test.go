package apply

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// TestMarkersAcrossShardsAndGroups: an hour of many markers is spread over
// shards that split as it grows, and, when the hour before held many, over
// several groups; every marker is found again where it was set (a
// redelivery applies nothing twice, a re-published copy is a duplicate),
// reads back its origin, and every marker key expires; on redis-server and
// on the embedded miniredis.
func TestMarkersAcrossShardsAndGroups(t *testing.T) {
	t.Run("redis", func(t *testing.T) { markersAcrossShards(t, testredis.StartStandalone(t).Client()) })
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.RunT(t)
		mr.SetTime(testNow)
		markersAcrossShards(t, redis.NewClient(&redis.Options{Addr: mr.Addr()}))
	})
}

func markersAcrossShards(t *testing.T, rdb *redis.Client) {
	ctx := context.Background()
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
	for _, c := range []struct {
		name string
		at   time.Time
		prev int // markers of the hour before
	}{{"one group", ts, 0}, {"four groups", ts.Add(-24 * time.Hour), 3 * 262144}} {
		if c.prev > 0 {
			prev := a.markers.hour("", c.at.UnixMilli()/hourMs-1)
			rdb.HSet(ctx, prev, "n", c.prev)
			rdb.Expire(ctx, prev, time.Hour)
		}
		var evs []events.Event
		for i := range 3000 {
			u := "u" + strconv.Itoa(i%400)
			evs = append(evs, view(fmt.Sprintf("%s-%d", c.name, i), u, "p1", c.at.Add(time.Duration(i)*time.Millisecond)))
		}
		for start := 0; start < len(evs); start += 500 { // in batches, so that shards split between them
			recs, ranges := batchAt(int64(start), evs[start:start+500]...)
			if _, err := a.Apply(ctx, recs, ranges[:0]); err != nil {
				t.Fatal(err)
			}
		}
		h := a.markers.hour("", c.at.UnixMilli()/hourMs)
		if g := rdb.HGet(ctx, h, "G").Val(); c.prev > 0 && g != "4" || c.prev == 0 && g != "1" {
			t.Errorf("%s: G = %s", c.name, g)
		}
		if l := rdb.HGet(ctx, h, "L0").Val(); l == "" || l == "0" {
			t.Errorf("%s: group 0 at level %q after 3000 markers: no shard split", c.name, l)
		}
		again := append(append([]events.Event{}, evs...), evs[7], evs[2999])
		recs, ranges := batchAt(0, again...)
		res, err := a.Apply(ctx, recs, ranges[:0])
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range res.Outcomes {
			if want := map[bool]Outcome{false: Applied, true: Duplicate}[i >= len(evs)]; o != want {
				t.Fatalf("%s: outcome %d = %v, want %v", c.name, i, o, want)
			}
		}
		if w := res.Writes; w != 0 {
			t.Errorf("%s: the redelivery wrote %d times", c.name, w)
		}
		for _, i := range []int{0, 1234, 2999} {
			if got, want := markerOf(t, a.Core, evs[i].UserID, time.UnixMilli(evs[i].TS), evs[i].ID), fmt.Sprintf("shop.views:0:%d", i); got != want {
				t.Errorf("%s: marker of record %d names %q, want %q", c.name, i, got, want)
			}
		}
	}
	keys, err := rdb.Keys(ctx, "px:seen:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if ttl := rdb.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("marker key %s: PTTL %v, want an expiry", k, ttl)
		}
	}
}

// TestDayMarkersHonoured: on a Redis whose markers are by user and day (an
// earlier version applied a batch but did not commit it), a consumer of this
// version counts them as existing until they expire: the redelivered
// records are applied before (nothing twice), a re-published copy is a
// duplicate, and new events get markers by hour.
func TestDayMarkersHonoured(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	ts := testNow.Add(-time.Hour)
	day := ts.Format("2006-01-02")
	rdb.HSet(ctx, "px:meta:{g}", "status", "ready") // the earlier version's meta: no markers_since
	rdb.HSet(ctx, "px:seen:{u:u1}:"+day, "e1", "shop.views:0:0", "e2", "shop.views:0:1")
	rdb.Expire(ctx, "px:seen:{u:u1}:"+day, 48*time.Hour)
	rdb.Set(ctx, "st:{u:u1}:views:"+day, 2, 0) // what it applied
	a := newTestApplier(t, rdb, projections.Defaults())
	if a.dayUntil <= testNow.UnixMilli() {
		t.Fatalf("markers by day honoured until %d, want after now", a.dayUntil)
	}
	recs, ranges := batchAt(0, view("e1", "u1", "p1", ts), view("e2", "u1", "p2", ts), view("e3", "u1", "p3", ts))
	res, err := a.Apply(ctx, recs, ranges[:0])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Outcomes) != fmt.Sprint([]Outcome{Applied, Applied, Applied}) {
		t.Errorf("outcomes %v, want all applied (two of them before)", res.Outcomes)
	}
	recs, ranges = batchAt(10, view("e2", "u1", "p2", ts), view("e3", "u1", "p3", ts))
	res, err = a.Apply(ctx, recs, ranges[:0])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Outcomes) != fmt.Sprint([]Outcome{Duplicate, Duplicate}) {
		t.Errorf("re-published copies: outcomes %v, want duplicates", res.Outcomes)
	}
	if got := mustGet(t, rdb, "st:{u:u1}:views:"+day); got != "3" {
		t.Errorf("u1 views %s, want 3 (each event once)", got)
	}
	if got := markerOf(t, a.Core, "u1", ts, "e3"); got != "shop.views:0:2" {
		t.Errorf("marker of e3 %q, want shop.views:0:2", got)
	}
	if got := markerOf(t, a.Core, "u1", ts, "e1"); got != "shop.views:0:0" {
		t.Errorf("marker of e1 read through the day hash %q, want shop.views:0:0", got)
	}
	// A fresh Redis has no markers by day: none is looked for.
	fresh := newTestApplier(t, testredis.StartStandalone(t).Client(), projections.Defaults())
	if fresh.dayUntil != 0 {
		t.Errorf("fresh Redis: markers by day honoured until %d, want 0", fresh.dayUntil)
	}
}
