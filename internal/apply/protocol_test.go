package apply

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"projector/internal/apply/wire"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	p "projector/pkg/projections"
)

// servers are the servers the protocol must work on: Redis 7.0, Valkey 8.1
// and the embedded demo's miniredis.
func servers(t *testing.T) map[string]redis.UniversalClient {
	out := map[string]redis.UniversalClient{}
	for _, fl := range testredis.Flavors() {
		out[string(fl)] = testredis.StartStandalone(t, testredis.WithFlavor(fl)).Client()
	}
	mr := miniredis.RunT(t)
	mr.SetTime(testNow)
	out["miniredis"] = redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return out
}

// TestUnknownModeOrKindIsAnError: the scripts answer an unknown mode, and
// the apply script an unknown write kind, with an error, and an unknown
// mode writes nothing.
func TestUnknownModeOrKindIsAnError(t *testing.T) {
	ctx := context.Background()
	as, ss := wire.ApplyScript(), wire.SealScript()
	for name, rdb := range servers(t) {
		call := func(s *wire.Script, args ...any) error {
			_, err := s.Run(ctx, rdb, append(s.Start(len(args), "px:wm:{g}"), args...), 1)
			return err
		}
		// a global call in mode "x" that would set the watermark
		err := call(as, "x", "px:wm:{g}", "1", "shop.views:0", "0", "0", "0", 0, 0)
		if err == nil || !strings.Contains(err.Error(), "unknown mode x") {
			t.Errorf("%s: apply script in mode x: %v, want an unknown mode error", name, err)
		}
		if n := rdb.Exists(ctx, "px:wm:{g}").Val(); n != 0 {
			t.Errorf("%s: apply script in mode x wrote the watermark", name)
		}
		if err := call(ss, "x", 1, "shop.views:0", 0, 0); err == nil || !strings.Contains(err.Error(), "unknown mode x") {
			t.Errorf("%s: seal script in mode x: %v, want an unknown mode error", name, err)
		}
		// no markers, no profiles, no counters, then one write of each unknown kind
		for _, kind := range []any{wire.KindCode(p.IncrBy), "0", "z"} {
			err := call(as, wire.ModeUser.Arg(), 0, 0, 0, kind, "k", "1", "0")
			if err == nil || !strings.Contains(err.Error(), "unknown write kind") {
				t.Errorf("%s: write kind %v: %v, want an unknown write kind error", name, kind, err)
			}
		}
	}
}

// TestEveryKindOnEveryServer: a batch with writes of every kind is applied
// once on Redis, Valkey and miniredis, and applying it again (Repair: past
// the markers and the watermark) changes nothing.
func TestEveryKindOnEveryServer(t *testing.T) {
	ctx := context.Background()
	ts := testNow.Add(-time.Hour)
	day := ts.Format("2006-01-02")
	cfg := p.Defaults()
	cfg.History.Scope = []string{"device", "store"} // a registry of the user's history keys (SAdd)
	for name, rdb := range servers(t) {
		a := guardedApplier(t, rdb, cfg, Guards{GapCheck: true})
		evs := []events.Event{view("e1", "u1", "p1", ts), view("e2", "u1", "p2", ts.Add(time.Second)),
			{ID: "o1", Type: events.Order, TS: ts.Add(2 * time.Second).UnixMilli(), UserID: "u1",
				Items: []events.Item{{ProductID: "p1", Quantity: 2, PriceCents: 150}}},
			{ID: "r1", Type: events.HistoryItemRemoved, TS: ts.Add(3 * time.Second).UnixMilli(), UserID: "u1", ProductID: "p2"},
			{ID: "c1", Type: events.HistoryCleared, TS: ts.Add(4 * time.Second).UnixMilli(), UserID: "u1"},
			view("e3", "u1", "p3", ts.Add(5*time.Second))}
		kinds := map[p.Kind]bool{}
		pl, _ := p.NewPlanner(cfg, time.UTC, "")
		for _, ev := range evs {
			for _, w := range pl.Plan(ev, testNow, nil) {
				kinds[w.Kind] = true
			}
		}
		if len(kinds) != int(wire.LastKind) {
			t.Fatalf("the batch plans %d kinds of write, want all %d", len(kinds), wire.LastKind)
		}
		recs, rg := batchAt(0, evs...)
		for round, run := range []func(context.Context, []Record, []Range) (Result, error){a.Apply, a.Repair} {
			res, err := run(ctx, recs, rg)
			if err != nil {
				t.Fatalf("%s: round %d: %v", name, round, err)
			}
			for i, o := range res.Outcomes {
				if o != Applied {
					t.Errorf("%s: round %d: outcome %d = %v, want Applied", name, round, i, o)
				}
			}
			if round == 1 && res.Writes != 0 {
				t.Errorf("%s: applied again: %d writes", name, res.Writes)
			}
		}
		if got := mustGet(t, rdb, "st:{g}:revenue_cents:"+day); got != "300" {
			t.Errorf("%s: revenue %s, want 300", name, got)
		}
		if got := mustGet(t, rdb, "st:{u:u1}:views:"+day); got != "3" {
			t.Errorf("%s: u1 views %s, want 3", name, got)
		}
		if lv := rdb.ZRange(ctx, "lv:{u:u1}", 0, -1).Val(); fmt.Sprint(lv) != "[p3]" {
			t.Errorf("%s: lv %v, want [p3] (the others cleared)", name, lv)
		}
		// the rankings' ZIncrBy writes (grouped per key in the program): three products viewed, one ordered twice
		for key, want := range map[string]string{"pv:{g}:" + day: "[{1 p1} {1 p2} {1 p3}]", "best:{g}:" + day: "[{2 p1}]"} {
			if got := rdb.ZRangeWithScores(ctx, key, 0, -1).Val(); fmt.Sprint(got) != want {
				t.Errorf("%s: %s = %v, want %s", name, key, got, want)
			}
		}
	}
}

// TestNoScriptLoadsAgain: a server that lost the scripts (SCRIPT FLUSH, as
// after a restart) gets them again from the next call.
func TestNoScriptLoadsAgain(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := newTestApplier(t, rdb, p.Defaults())
	ts := testNow.Add(-time.Hour)
	for i := range 2 {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		recs, rg := batchAt(int64(i), view(fmt.Sprint("e", i), "u1", "p1", ts))
		res, err := a.Apply(ctx, recs, rg)
		if err != nil || res.Outcomes[0] != Applied {
			t.Fatalf("Apply after SCRIPT FLUSH: %v %v", res.Outcomes, err)
		}
		if ok := rdb.ScriptExists(ctx, a.script.SHA).Val(); len(ok) != 1 || !ok[0] {
			t.Fatalf("the apply script is not loaded again after SCRIPT FLUSH")
		}
	}
	if got := mustGet(t, rdb, "st:{u:u1}:views:"+ts.Format("2006-01-02")); got != "2" {
		t.Errorf("u1 views %s, want 2", got)
	}
}
