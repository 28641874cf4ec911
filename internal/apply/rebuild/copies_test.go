package rebuild

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// twoCopies returns one batch holding two copies of ev, published in
// partitions 0 and 1 of shop.views (offset 0 each): the copy of partition 0
// first.
func twoCopies(ev events.Event) ([]apply.Record, []apply.Range) {
	recs := []apply.Record{
		{Topic: "shop.views", Partition: 0, Offset: 0, Event: ev},
		{Topic: "shop.views", Partition: 1, Offset: 0, Event: ev},
	}
	return recs, []apply.Range{
		{Topic: "shop.views", Partition: 0, First: 0, Last: 0},
		{Topic: "shop.views", Partition: 1, First: 0, Last: 0},
	}
}

// applyCopyOfPartition1 lets a consumer apply the copy of ev in partition 1
// alone, then the copy in partition 0 alone (a duplicate by then).
func applyCopyOfPartition1(t *testing.T, ctx context.Context, a *apply.Applier, ev events.Event) {
	t.Helper()
	recs, ranges := twoCopies(ev)
	for _, i := range []int{1, 0} {
		res, err := a.Apply(ctx, recs[i:i+1], ranges[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if want := []apply.Outcome{apply.Applied, apply.Duplicate}[1-i]; res.Outcomes[0] != want {
			t.Fatalf("consumer: copy of partition %d: outcome %v, want %v", i, res.Outcomes[0], want)
		}
	}
}

// wipeKeys deletes the keys matching pattern (on every master of a cluster).
func wipeKeys(t *testing.T, ctx context.Context, rdb redis.UniversalClient, pattern string) {
	t.Helper()
	wipe := func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, pattern).Result()
		if err != nil || len(keys) == 0 {
			return err
		}
		for _, k := range keys {
			if err := c.Del(ctx, k).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, wipe)
	} else {
		err = wipe(ctx, rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestCopiesInOneBatchFollowTheMarker: a consumer applied the copy of an
// event published in partition 1; the copy in partition 0 came later and
// was a duplicate. A batch that holds both copies with partition 0's first
// (a replay reads the partitions in another order than the consumer did)
// applies the copy the marker names, exactly once: the Rebuilder (user and
// global writes), CheckOnly (global writes), and the consumer's apply.Applier
// for a redelivery after a crash between the user and the global phase.
func TestCopiesInOneBatchFollowTheMarker(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, ev events.Event) (user, global string)
	}{
		{"rebuilder", func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, ev events.Event) (string, string) {
			applyCopyOfPartition1(t, ctx, consumer(t, rdb), ev)
			wipeKeys(t, ctx, rdb, "st:*")
			recs, ranges := twoCopies(ev)
			res, err := rebuilder(t, rdb, All, "T1").Apply(ctx, recs, ranges)
			if err != nil {
				t.Fatal(err)
			}
			checkOutcomes(t, res, apply.Duplicate, apply.Applied)
			return "st:{u:u1}:views:2026", "st:{g}:views:2026"
		}},
		{"check only", func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, ev events.Event) (string, string) {
			applyCopyOfPartition1(t, ctx, consumer(t, rdb), ev)
			wipeKeys(t, ctx, rdb, "st:{g}:*")
			p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
			if err != nil {
				t.Fatal(err)
			}
			a := NewCheckOnly(rdb, p, testOptions(), Selection{Only: map[string]bool{"stats": true}, WatermarkKey: "px:rwm:{g}"})
			recs, ranges := twoCopies(ev)
			res, err := a.Apply(ctx, recs, ranges)
			if err != nil {
				t.Fatal(err)
			}
			checkOutcomes(t, res, apply.Duplicate, apply.Applied)
			return "st:{u:u1}:views:2026", "st:{g}:views:2026"
		}},
		{"redelivery", func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, ev events.Event) (string, string) {
			a := consumer(t, rdb)
			recs, ranges := twoCopies(ev)
			p, err := a.Prepare(ctx, recs[1:], ranges[1:]) // partition 1's batch: its user phase, then a crash
			if err != nil {
				t.Fatal(err)
			}
			err = a.CommitUsers(ctx, p)
			p.Release()
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Apply(ctx, recs, ranges)
			if err != nil {
				t.Fatal(err)
			}
			checkOutcomes(t, res, apply.Duplicate, apply.Applied)
			return "st:{u:u1}:views:2026", "st:{g}:views:2026"
		}},
	} {
		for _, kind := range []string{"standalone", "cluster"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				ctx := context.Background()
				var rdb redis.UniversalClient
				if kind == "cluster" {
					rdb = testredis.StartCluster(t, 3).Client()
				} else {
					rdb = testredis.StartStandalone(t).Client()
				}
				ev := view("e1", "u1", "p1", testNow.Add(-time.Hour))
				user, global := tc.run(t, ctx, rdb, ev)
				if got := mustGet(t, rdb, user); got != "1" {
					t.Errorf("%s = %s, want 1", user, got)
				}
				if got := mustGet(t, rdb, global); got != "1" {
					t.Errorf("%s = %s, want 1", global, got)
				}
			})
		}
	}
}

// checkOutcomes compares res's outcomes with want.
func checkOutcomes(t *testing.T, res apply.Result, want ...apply.Outcome) {
	t.Helper()
	for i, o := range res.Outcomes {
		if o != want[i] {
			t.Errorf("outcome %d = %v, want %v", i, o, want[i])
		}
	}
}
