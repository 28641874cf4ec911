package apply

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/gen"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// TestTransactionsEqualScript: the user writes applied by MULTI/EXEC
// (multi.go) leave the same keys, values and expiries as the script after
// every batch, on Redis 7.0 and Valkey 8.1, for a log whose short lifetimes
// make every branch of the sets' trims and expiries fire: out-of-order
// events below the window, sets trimmed by size, history clears and
// removals (which go to the script, between transactions of the user's
// records before and after them: splitForTx), duplicates and redeliveries, batches
// of 1 to 150 records, and the lifetimes and sizes lowered and raised
// halfway.
func TestTransactionsEqualScript(t *testing.T) {
	start := time.Now().Add(4 * time.Hour) // every event and expiry lies hours ahead of the test
	gc := gen.DefaultConfig()
	gc.Users, gc.Products, gc.Start, gc.Span = 25, 12, start, 3*time.Hour
	gc.OutOfOrderRate = 0.15
	var recs []Record
	for i, r := range gen.New(gc).Log(3000) {
		if ev, err := events.Decode(r.Value); err == nil {
			recs = append(recs, Record{Topic: "shop.views", Partition: 0, Offset: int64(i), Event: ev})
		}
	}
	first, second := projections.Defaults(), projections.Defaults()
	first.LastViewed.Size, first.LastViewed.TTL = 3, 40*time.Minute
	first.History.Size, first.History.Retention = 5, 70*time.Minute
	first.Orders.TTL = 50 * time.Minute
	second.LastViewed.Size, second.LastViewed.TTL = 2, 20*time.Minute
	second.History.Size, second.History.Retention = 8, 2*time.Hour
	second.Orders.TTL = 30 * time.Minute
	var steps []step
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < len(recs); {
		part := recs[i:min(i+1+rng.IntN(150), len(recs))]
		i += len(part)
		cfg := first
		if i > len(recs)/2 {
			cfg = second
		}
		steps = append(steps, step{cfg: cfg, now: testNow, recs: part}, step{cfg: cfg, now: testNow, recs: part})
	}
	stepsAgree(t, steps)
}

// TestTransactionsEqualScriptOnEdges: the cases a random log seldom
// reaches, step by step as the script: a set written after its size was
// lowered shrinks to the new size even when it does not grow; a marker hash whose records are
// applied after the end of its day (+ window) gets the later expiry.
func TestTransactionsEqualScriptOnEdges(t *testing.T) {
	ts := time.Now().Add(time.Hour)
	small := projections.Defaults()
	small.LastViewed.Size = 2
	recs1, _ := batchAt(0, view("a1", "u1", "p1", ts), view("a2", "u1", "p2", ts.Add(time.Second)),
		view("a3", "u1", "p3", ts.Add(2*time.Second)))
	recs2, _ := batchAt(3, view("a4", "u1", "p3", ts.Add(3*time.Second)))
	recs3, _ := batchAt(4, view("a5", "u1", "p4", ts.Add(4*time.Second)))
	stepsAgree(t, []step{
		{cfg: projections.Defaults(), now: ts, recs: recs1},
		{cfg: small, now: ts, recs: recs2},
		{cfg: small, now: ts.Add(30 * time.Hour), recs: recs3},
	})
}

// step is one batch of stepsAgree: its records, applied with cfg at now.
type step struct {
	cfg  projections.Config
	now  time.Time
	recs []Record
}

// stepsAgree applies the steps, in order, by script on one Redis 7.0 and by
// transactions on another and on a Valkey 8.1, and compares the three after
// each step; the transactions must have been used.
func stepsAgree(t *testing.T, steps []step) {
	t.Helper()
	script := testredis.StartStandalone(t).Client()
	multi := map[string]*redis.Client{"redis": testredis.StartStandalone(t).Client(),
		"valkey": testredis.StartStandalone(t, testredis.WithValkey()).Client()}
	apply := func(rdb *redis.Client, st step, viaMulti bool) {
		a := newTestApplier(t, rdb, st.cfg)
		a.multi = viaMulti
		at := st.now
		a.opts.Now = func() time.Time { return at }
		r := []Range{{Topic: "shop.views", Partition: 0, First: st.recs[0].Offset, Last: st.recs[len(st.recs)-1].Offset}}
		if _, err := a.Apply(context.Background(), st.recs, r); err != nil {
			t.Fatal(err)
		}
	}
	for i, st := range steps {
		apply(script, st, false)
		want := dumpState(t, script)
		for name, rdb := range multi {
			apply(rdb, st, true)
			compareStates(t, fmt.Sprintf("step %d, transactions on %s", i+1, name), want, dumpState(t, rdb))
		}
		if t.Failed() {
			return
		}
	}
	if n := commandCalls(t, script, "exec"); n != 0 {
		t.Errorf("%d transactions on the script's server", n)
	}
	for name, rdb := range multi {
		if commandCalls(t, rdb, "exec") == 0 {
			t.Errorf("no transaction on %s", name)
		}
	}
}

// TestTransactionFencedByWatch: a marker set by another client between the
// transaction's reads and its EXEC (a second consumer applying the same
// record) makes EXEC write nothing; the round is read again, finds the
// marker, and the record counts once.
func TestTransactionFencedByWatch(t *testing.T) {
	srv := testredis.StartStandalone(t)
	rdb := srv.Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
	recs, ranges := batchAt(0, view("a1", "u1", "p1", ts))
	other := newTestApplier(t, srv.Client(), projections.Defaults())
	var raced bool
	rdb.AddHook(raceHook{before: func(cmds []redis.Cmder) {
		if raced || len(cmds) == 0 || cmds[0].Name() != "multi" {
			return
		}
		raced = true
		if _, err := other.Apply(context.Background(), recs, ranges); err != nil {
			t.Error(err)
		}
	}})
	res, err := a.Apply(context.Background(), recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	if !raced {
		t.Fatal("no transaction was sent")
	}
	if res.Outcomes[0] != Applied {
		t.Errorf("outcome %v, want Applied (the other consumer applied this very record)", res.Outcomes[0])
	}
	if got := mustGet(t, rdb, "st:{u:u1}:views:"+testDay); got != "1" {
		t.Errorf("views = %s, want 1", got)
	}
}

// raceHook calls before ahead of every pipeline it sees.
type raceHook struct{ before func([]redis.Cmder) }

func (h raceHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h raceHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h raceHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.before(cmds)
		return next(ctx, cmds)
	}
}

// TestLoweredSizeShrinksAtNextWrite: after last_viewed.size is lowered, a
// view of a product already in the set (it adds no member) trims the set to
// the new size, by script and by transaction alike (docs/contract.md 10).
func TestLoweredSizeShrinksAtNextWrite(t *testing.T) {
	ts := testNow.Add(-time.Hour)
	small := projections.Defaults()
	small.LastViewed.Size = 2
	recs1, rng1 := batchAt(0, view("a1", "u1", "p1", ts), view("a2", "u1", "p2", ts.Add(time.Second)),
		view("a3", "u1", "p3", ts.Add(2*time.Second)))
	recs2, rng2 := batchAt(3, view("a4", "u1", "p3", ts.Add(3*time.Second)))
	for _, viaMulti := range []bool{false, true} {
		rdb := testredis.StartStandalone(t).Client()
		for _, st := range []struct {
			cfg  projections.Config
			recs []Record
			rng  []Range
		}{{projections.Defaults(), recs1, rng1}, {small, recs2, rng2}} {
			a := newTestApplier(t, rdb, st.cfg)
			a.multi = viaMulti
			if _, err := a.Apply(context.Background(), st.recs, st.rng); err != nil {
				t.Fatal(err)
			}
		}
		got, err := rdb.ZRange(context.Background(), "lv:{u:u1}", 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"p2", "p3"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("transactions %v: lv:{u:u1} = %v, want %v", viaMulti, got, want)
		}
	}
}
