package apply

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// gapApplier is the consumer's applier: gaps checked, per-master evidence kept.
func gapApplier(t *testing.T, rdb redis.UniversalClient, sync Sync) *Applier {
	t.Helper()
	return guardedApplier(t, rdb, projections.Defaults(), Guards{GapCheck: true, Evidence: true, Sync: sync})
}

func wantGap(t *testing.T, err error, applied int64, node bool) {
	t.Helper()
	var ge *GapError
	if !errors.As(err, &ge) {
		t.Fatalf("want a *GapError, got %v", err)
	}
	g := ge.Gaps[0]
	if len(ge.Gaps) != 1 || g.Topic != "shop.views" || g.Partition != 0 || g.Applied != applied || (g.Node != "") != node {
		t.Fatalf("gaps %+v, want shop.views:0 applied %d (node %v)", ge.Gaps, applied, node)
	}
}

// TestGapBeforeBatchWritesNothing: a watermark below the batch's first
// offset - 1 (Redis went back in time) stops the batch before any write;
// Repair of the lost records and then the batch fills the gap, and records
// below the watermark are applied again by Repair (their markers decide).
func TestGapBeforeBatchWritesNothing(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := gapApplier(t, rdb, Sync{})
	ts := testNow.Add(-time.Hour)
	recs, rg := batchAt(0, view("e0", "u1", "p0", ts), view("e1", "u1", "p1", ts))
	if _, err := a.Apply(ctx, recs, rg); err != nil {
		t.Fatal(err)
	}
	lost, lostRg := batchAt(2, view("e2", "u2", "p2", ts), view("e3", "u2", "p3", ts))
	next, nextRg := batchAt(4, view("e4", "u3", "p4", ts))
	_, err := a.Apply(ctx, next, nextRg)
	wantGap(t, err, 1, false)
	if n := rdb.Exists(ctx, "lv:{u:u3}").Val(); n != 0 {
		t.Fatalf("the refused batch wrote lv:{u:u3}")
	}
	if _, err := a.Repair(ctx, lost, lostRg); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, next, nextRg); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, rdb, "st:{g}:views:"+testDay); got != "5" {
		t.Fatalf("global views %s, want 5", got)
	}
	// Repair below the watermark: the user's writes are gone, its marker too
	// (as after a rollback of a Redis Cluster master); the global ones stay.
	rdb.Del(ctx, "lv:{u:u2}", "px:seen:{u:u2}:"+testDay)
	if _, err := a.Repair(ctx, lost, lostRg); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, "lv:{u:u2}").Val(); n != 2 {
		t.Fatalf("Repair below the watermark restored %d members of lv:{u:u2}, want 2", n)
	}
	if got := mustGet(t, rdb, "st:{g}:views:"+testDay); got != "5" {
		t.Fatalf("global views %s after Repair, want 5 (counted once)", got)
	}
	if res, err := a.Apply(ctx, lost, lostRg); err != nil || res.Outcomes[0] != Skipped {
		t.Fatalf("Apply below the watermark: %v %v, want skipped", res.Outcomes, err)
	}
}

// TestGapAfterPrecheck: Redis going back in time between the check and the
// global script is still refused by the script (mode G).
func TestGapAfterPrecheck(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := gapApplier(t, rdb, Sync{})
	ts := testNow.Add(-time.Hour)
	recs, rg := batchAt(10, view("e0", "u1", "p0", ts))
	rdb.HSet(ctx, "px:wm:{g}", "shop.views:0", "9")
	if _, err := a.Apply(ctx, recs, rg); err != nil {
		t.Fatal(err)
	}
	recs, rg = batchAt(11, view("e1", "u1", "p1", ts))
	rdb.HSet(ctx, "px:wm:{g}", "shop.views:0", "5") // older state, after the check read 10
	b := newBatch(nil, rg)
	b.wms = map[string]string{"shop.views:0": "10"}
	err := a.applyGlobal(ctx, b, a.globalGuard())
	wantGap(t, err, 5, false)
	if v := rdb.HGet(ctx, "px:wm:{g}", "shop.views:0").Val(); v != "5" {
		t.Fatalf("watermark %s after a refused global call, want 5", v)
	}
}

// TestClusterMasterEvidence: each master keeps its own watermarks; one
// master that lost them (as after a restart from an older snapshot) is named
// in the gap while the global watermarks are intact.
func TestClusterMasterEvidence(t *testing.T) {
	c := testredis.StartCluster(t, 3)
	ctx := context.Background()
	a := gapApplier(t, c.Client(), Sync{})
	ts := testNow.Add(-time.Hour)
	recs, rg := batchAt(0, view("e0", "u1", "p0", ts), view("e1", "u2", "p1", ts), view("e2", "u3", "p2", ts))
	if _, err := a.Apply(ctx, recs, rg); err != nil {
		t.Fatal(err)
	}
	ev, err := testMeta(c.Client()).ReadEvidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Nodes) != 3 {
		t.Fatalf("evidence of %d masters, want 3: %+v", len(ev.Nodes), ev)
	}
	var victim string
	for addr, wm := range ev.Nodes {
		if wm["shop.views:0"] != 2 {
			t.Fatalf("master %s holds %v, want shop.views:0 = 2", addr, wm)
		}
		victim = addr
	}
	key := a.nodes.nk.keys[victim]
	if !strings.HasPrefix(key, "px:nwm:{n") {
		t.Fatalf("node key %q", key)
	}
	var node *redis.Client
	_ = c.Client().ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if m.Options().Addr == victim {
			node = m
		}
		return nil
	})
	node.HSet(ctx, key, "shop.views:0", "0")
	recs, rg = batchAt(3, view("e3", "u1", "p3", ts))
	_, err = a.Apply(ctx, recs, rg)
	wantGap(t, err, 0, true)
	if low, at, ok := mustEvidence(t, testMeta(c.Client())).Lowest("shop.views:0"); !ok || low != 0 || at != victim {
		t.Fatalf("Lowest = %d %q %v, want 0 on %s", low, at, ok, victim)
	}
}

func mustEvidence(t *testing.T, m *Meta) Evidence {
	t.Helper()
	ev, err := m.ReadEvidence(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestWaitForReplicas: with Sync a batch returns only once a replica holds
// it, and fails with a *SyncError while the replica is frozen.
func TestWaitForReplicas(t *testing.T) {
	master, replica := testredis.StartStandalone(t), testredis.StartStandalone(t)
	ctx := context.Background()
	host, port, _ := strings.Cut(master.Addr(), ":")
	if err := replica.Client().ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	a := gapApplier(t, master.Client(), Sync{Replicas: 1, Timeout: 2 * time.Second})
	ts := testNow.Add(-time.Hour)
	deadline := time.Now().Add(20 * time.Second)
	recs, rg := batchAt(0, view("e0", "u1", "p0", ts))
	for {
		_, err := a.Apply(ctx, recs, rg)
		if err == nil {
			break
		}
		var se *SyncError
		if !errors.As(err, &se) || time.Now().After(deadline) {
			t.Fatalf("Apply with a replica: %v", err)
		}
	}
	if n := replica.Client().ZCard(ctx, "lv:{u:u1}").Val(); n != 1 {
		t.Fatalf("replica holds %d members of lv:{u:u1} after the batch returned, want 1", n)
	}
	replica.Pause()
	defer replica.Resume()
	recs, rg = batchAt(1, view("e1", "u1", "p1", ts))
	_, err := a.Apply(ctx, recs, rg)
	var se *SyncError
	if !errors.As(err, &se) || !strings.Contains(se.Error(), "0 of 1 replicas") {
		t.Fatalf("Apply with a frozen replica: %v, want a *SyncError", err)
	}
}

// TestWaitAOF: WAITAOF on Valkey returns once the batch is fsynced.
func TestWaitAOF(t *testing.T) {
	srv := testredis.StartStandalone(t, testredis.WithValkey(), testredis.WithAOF())
	a := gapApplier(t, srv.Client(), Sync{AOF: true, Timeout: 5 * time.Second})
	recs, rg := batchAt(0, view("e0", "u1", "p0", testNow.Add(-time.Hour)))
	if _, err := a.Apply(context.Background(), recs, rg); err != nil {
		t.Fatal(err)
	}
	if v := srv.Client().HGet(context.Background(), "px:nwm:{g}", "shop.views:0").Val(); v != "0" {
		t.Fatalf("px:nwm:{g} = %q, want 0", v)
	}
}
