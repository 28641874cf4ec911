package apply

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// TestSplitForTxCutsAtRemovals: a group is cut before its first record that
// a transaction cannot apply; a group that starts with such records keeps
// the run of them (one script call), and is not cut when it holds nothing
// else; rejoin hands the records cut off to the next round, after what a round
// left of the group (records behind a found marker), and in the round's
// order of users.
func TestSplitForTxCutsAtRemovals(t *testing.T) {
	add := projections.Write{Kind: projections.ZAddMax}
	rem := projections.Write{Kind: projections.ZRemUpTo}
	rec := func(ws ...projections.Write) *item { return &item{user: ws} }
	a1, a2, r3, a4 := rec(add), rec(add, add), rec(add, rem), rec(add)
	b1, b2 := rec(rem), rec(add)
	c1 := rec(add)
	d1, d2, d3 := rec(rem), rec(add, rem), rec(add)
	e1, e2 := rec(rem), rec(rem)
	groups := map[string][]*item{"a": {a1, a2, r3, a4}, "b": {b1, b2}, "c": {c1}, "d": {d1, d2, d3}, "e": {e1, e2}}
	later := splitForTx(groups, []string{"a", "b", "c", "d", "e"})
	same := func(name string, got, want []*item) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	same("group a", groups["a"], []*item{a1, a2})
	same("later a", later["a"], []*item{r3, a4})
	same("group b", groups["b"], []*item{b1})
	same("later b", later["b"], []*item{b2})
	same("group c", groups["c"], []*item{c1})
	same("group d", groups["d"], []*item{d1, d2})
	same("later d", later["d"], []*item{d3})
	same("group e", groups["e"], []*item{e1, e2})
	for _, u := range []string{"c", "e"} {
		if _, ok := later[u]; ok {
			t.Errorf("group %s was cut: it holds records of one kind only", u)
		}
	}
	delete(later, "d")
	// A round that applied a's records and left b1 to apply again (as
	// records behind a found marker are left):
	groups["b"] = []*item{b1}
	next := rejoin(groups, later, []string{"a", "b", "c"}, []string{"b"})
	if fmt.Sprint(next) != "[b a]" {
		t.Errorf("next round = %v, want [b a]", next)
	}
	same("group a after the round", groups["a"], []*item{r3, a4})
	same("group b after the round", groups["b"], []*item{b1, b2})
	if got := rejoin(groups, nil, []string{"a"}, []string{"x"}); fmt.Sprint(got) != "[x]" {
		t.Errorf("rejoin without cuts = %v, want [x]", got)
	}
}

// TestTransactionsAroundRemovals: a user whose batch holds views, a history
// clear, more views, a history item removal and more views gets the views
// by transactions (three: before, between and after the removals) and the
// removals by script, in order, leaving what the script alone leaves.
func TestTransactionsAroundRemovals(t *testing.T) {
	ts := testNow.Add(-time.Hour)
	at := func(s int) time.Time { return ts.Add(time.Duration(s) * time.Second) }
	evs := []events.Event{view("a1", "u1", "p1", at(0)), view("a2", "u1", "p2", at(1)),
		{ID: "a3", Type: events.HistoryCleared, TS: at(2).UnixMilli(), UserID: "u1"},
		view("a4", "u1", "p3", at(3)), view("a5", "u1", "p1", at(1)), // below the clear: not in the history
		{ID: "a6", Type: events.HistoryItemRemoved, TS: at(5).UnixMilli(), UserID: "u1", ProductID: "p3"},
		view("a7", "u1", "p4", at(6)), view("a8", "u2", "p4", at(6))}
	recs, rng := batchAt(0, evs...)
	ctx := context.Background()
	var states []map[string]string
	for _, viaMulti := range []bool{false, true} {
		rdb := testredis.StartStandalone(t).Client()
		a := newTestApplier(t, rdb, projections.Defaults())
		a.multi = viaMulti
		res, err := a.Apply(ctx, recs, rng)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range res.Outcomes {
			if o != Applied {
				t.Errorf("transactions %v: record %d: outcome %v, want Applied", viaMulti, i, o)
			}
		}
		states = append(states, dumpState(t, rdb))
		if viaMulti {
			if n := commandCalls(t, rdb, "exec"); n != 3 {
				t.Errorf("%d transactions, want 3 (u1 before, between and after its removals; u2 with the first)", n)
			}
			if n := commandCalls(t, rdb, "evalsha") + commandCalls(t, rdb, "eval"); n != 3 {
				t.Errorf("%d script calls, want 3 (the clear, the removal, the global writes)", n)
			}
		}
	}
	compareStates(t, "transactions around removals", states[0], states[1])
	for _, key := range []string{"hist:{u:u1}", "lv:{u:u1}"} {
		got := states[1][key]
		if !strings.Contains(got, " p4") || strings.Count(got, "{") != 1 {
			t.Errorf("%s = %s, want p4 alone (p1, p2 cleared, p3 removed, the late p1 below the clear)", key, got)
		}
	}
}

// TestScopedHistoryKeepsOneScriptCall: with scoped history every view adds
// to the user's registry, which a transaction does not do: a user's views
// of a batch go by one script call, as before the cut existed, not by one
// call per view.
func TestScopedHistoryKeepsOneScriptCall(t *testing.T) {
	ts := testNow.Add(-time.Hour)
	var evs []events.Event
	for i := range 6 {
		evs = append(evs, view(fmt.Sprintf("a%d", i), "u1", fmt.Sprintf("p%d", i), ts.Add(time.Duration(i)*time.Second)))
	}
	recs, rng := batchAt(0, evs...)
	cfg := projections.Defaults()
	cfg.History.Scope = []string{"device", "store"}
	rdb := testredis.StartStandalone(t).Client()
	if _, err := newTestApplier(t, rdb, cfg).Apply(context.Background(), recs, rng); err != nil {
		t.Fatal(err)
	}
	if n := commandCalls(t, rdb, "evalsha") + commandCalls(t, rdb, "eval"); n != 2 {
		t.Errorf("%d script calls, want 2 (the user's six views, the global writes)", n)
	}
	if n := commandCalls(t, rdb, "exec"); n != 0 {
		t.Errorf("%d transactions, want none", n)
	}
	if got := mustGet(t, rdb, "st:{u:u1}:views:"+testDay); got != "6" {
		t.Errorf("views = %s, want 6", got)
	}
}
