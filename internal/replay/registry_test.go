package replay

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"projector/internal/gen"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// plannedKeys plans a generated log (scoped history, so that the registry of
// scoped keys is written too) and returns the keys each projection writes.
func plannedKeys(t *testing.T, prefix string) map[string][]string {
	t.Helper()
	cfg := projections.Defaults()
	cfg.History.Scope = []string{"device", "store"}
	p, err := projections.NewPlanner(cfg, time.UTC, prefix)
	if err != nil {
		t.Fatal(err)
	}
	gc := gen.DefaultConfig()
	seen := map[string]bool{}
	byName := map[string][]string{}
	var ws []projections.Write
	for _, r := range gen.New(gc).Log(1500) {
		ev, err := events.Decode(r.Value)
		if r.Poison || err != nil {
			continue
		}
		ws = p.Plan(ev, gc.Start.Add(-6*time.Hour), ws[:0])
		for _, w := range ws {
			for _, k := range []string{w.Key, w.Registry} {
				if k != "" && !seen[k] {
					seen[k] = true
					byName[w.Projection] = append(byName[w.Projection], k)
				}
			}
		}
	}
	for _, n := range projections.Names() {
		if len(byName[n]) == 0 {
			t.Fatalf("the generated log plans no key of %s", n)
		}
	}
	return byName
}

// TestWipeRemovesEveryPlannedKey: wiping one projection in a real Redis
// removes every key its planner writes and nothing else (other
// projections, bookkeeping); the wipe after a data loss removes every
// projection's keys and the exactly-once bookkeeping but not the lease,
// meta or published settings.
func TestWipeRemovesEveryPlannedKey(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	const prefix = "shop:"
	byName := plannedKeys(t, prefix)
	k := projections.Keys{Prefix: prefix}
	bookkeepingKeys := []string{k.Seen("u1", "2026-02-20"), k.Watermarks(), k.NodeWatermarks("g"), k.Global("px:dlq")}
	kept := []string{k.Meta(), k.Global("px:lease"), k.Global("px:cfg")}
	pipe := rdb.Pipeline()
	for _, keys := range byName {
		for _, key := range keys {
			pipe.Set(ctx, key, "x", 0)
		}
	}
	for _, key := range append(bookkeepingKeys, kept...) {
		pipe.Set(ctx, key, "x", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	count := func(keys []string) int64 {
		t.Helper()
		n, err := rdb.Exists(ctx, keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, name := range projections.Names() {
		before := map[string]int64{}
		for n, keys := range byName {
			before[n] = count(keys)
		}
		wiped, err := wipe(ctx, rdb, patterns(prefix, []string{name}))
		if err != nil {
			t.Fatal(err)
		}
		if left := count(byName[name]); left != 0 || wiped != int64(len(byName[name])) {
			t.Errorf("wipe %s: %d of its %d keys left, %d wiped", name, left, len(byName[name]), wiped)
		}
		for n, keys := range byName {
			if n != name && count(keys) != before[n] {
				t.Errorf("wipe %s removed keys of %s", name, n)
			}
		}
		if count(bookkeepingKeys)+count(kept) != int64(len(bookkeepingKeys)+len(kept)) {
			t.Errorf("wipe %s removed bookkeeping keys", name)
		}
		for _, key := range byName[name] { // back for the next round and the full wipe
			if err := rdb.Set(ctx, key, "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := wipe(ctx, rdb, append(patterns(prefix, projections.Names()), bookkeeping(prefix)...)); err != nil {
		t.Fatal(err)
	}
	for n, keys := range byName {
		if left := count(keys); left != 0 {
			t.Errorf("full wipe left %d keys of %s", left, n)
		}
	}
	if count(bookkeepingKeys) != 0 || count(kept) != int64(len(kept)) {
		t.Errorf("full wipe: bookkeeping %d left (want 0), meta/lease/cfg %d left (want %d)", count(bookkeepingKeys), count(kept), len(kept))
	}
}

// TestPausesFollowTheKeys: a rebuild holds a projection in the consumers
// (no pause) exactly when every key its planner writes is in the {g} slot,
// and pauses for any selection holding one that writes user keys.
func TestPausesFollowTheKeys(t *testing.T) {
	byName := plannedKeys(t, "")
	var held, paused []string
	for _, name := range projections.Names() {
		global := !slices.ContainsFunc(byName[name], func(k string) bool { return !strings.Contains(k, "{g}") })
		if pauses([]string{name}) == global {
			t.Errorf("%s: pauses = %v, but all its keys global = %v", name, !global, global)
		}
		if global {
			held = append(held, name)
		} else {
			paused = append(paused, name)
		}
	}
	if len(held) == 0 || len(paused) == 0 {
		t.Fatalf("held %v, paused %v: want both kinds", held, paused)
	}
	if pauses(held) || !pauses(append(held, paused[0])) || !pauses([]string{"no_such_projection"}) {
		t.Errorf("pauses(%v) = %v, with %s = %v", held, pauses(held), paused[0], pauses(append(held, paused[0])))
	}
}

// TestSelectProjections: selecting projections switches on exactly them,
// keeps every other setting, and refuses a name that is not enabled.
func TestSelectProjections(t *testing.T) {
	all := projections.Defaults()
	for _, name := range projections.Names() {
		sel, err := selectProjections(all, []string{name})
		if err != nil {
			t.Fatal(err)
		}
		if got := projections.EnabledNames(sel); !reflect.DeepEqual(got, []string{name}) {
			t.Errorf("select %s: enabled %v", name, got)
		}
		for _, s := range projections.All() {
			s.SetEnabled(&sel, true)
		}
		if !reflect.DeepEqual(sel, all) {
			t.Errorf("select %s changed settings other than enabled: %+v", name, sel)
		}
		off := all
		spec, _ := projections.Lookup(name)
		spec.SetEnabled(&off, false)
		if _, err := selectProjections(off, []string{name}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("select disabled %s: err %v", name, err)
		}
	}
	if sel, err := selectProjections(all, nil); err != nil || !reflect.DeepEqual(sel, all) {
		t.Errorf("no selection: %v %v", sel, err)
	}
}
