package apply

import (
	"context"
	"testing"

	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// TestPrepareAheadEqualsApply: the generator's log (duplicates, out-of-order
// events, orders, history clears) applied in batches, each batch planned by
// Prepare before the batch ahead of it is committed (or its user phase
// applied before the global phase of the batch ahead), a redelivered batch
// among them, leaves the same keys, values and expiries and the same
// outcomes as Apply batch by batch.
func TestPrepareAheadEqualsApply(t *testing.T) {
	recs := smallLog()
	type part struct {
		recs []Record
		rng  []Range
	}
	var parts []part
	for i := 0; i < len(recs); i += 100 {
		p := recs[i:min(i+100, len(recs))]
		parts = append(parts, part{p, []Range{{Topic: "shop.views", Partition: 0, First: p[0].Offset, Last: p[len(p)-1].Offset}}})
		if len(parts) == 4 { // a redelivery: batch 3 again after itself
			parts = append(parts, parts[3])
		}
	}
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// mode "apply": Apply batch by batch; "commit": each batch planned
	// before the one ahead of it is committed; "split": each batch planned
	// and its user phase applied (CommitUsers) before the global phase of
	// the one ahead of it (CommitGlobal), as the replay's lanes do.
	run := func(mode string) ([][]Outcome, map[string]string) {
		rdb := testredis.StartStandalone(t).Client()
		a := newTestApplier(t, rdb, projections.Defaults())
		outs := make([][]Outcome, len(parts))
		if mode == "apply" {
			for i, p := range parts {
				res, err := a.Apply(ctx, p.recs, p.rng)
				must(err)
				outs[i] = res.Outcomes
			}
			return outs, dumpState(t, rdb)
		}
		if mode == "split" {
			var prev *Prepared
			for i, p := range parts {
				cur, err := a.Prepare(ctx, p.recs, p.rng)
				must(err)
				must(a.CommitUsers(ctx, cur))
				if prev != nil {
					res, err := a.CommitGlobal(ctx, prev)
					must(err)
					outs[i-1] = res.Outcomes
				}
				prev = cur
			}
			res, err := a.CommitGlobal(ctx, prev)
			must(err)
			outs[len(parts)-1] = res.Outcomes
			return outs, dumpState(t, rdb)
		}
		next, err := a.Prepare(ctx, parts[0].recs, parts[0].rng)
		must(err)
		for i := range parts {
			cur := next
			if i+1 < len(parts) {
				next, err = a.Prepare(ctx, parts[i+1].recs, parts[i+1].rng)
				must(err)
			}
			res, err := a.Commit(ctx, cur)
			must(err)
			outs[i] = res.Outcomes
		}
		return outs, dumpState(t, rdb)
	}
	wantOut, want := run("apply")
	if len(want) < 100 {
		t.Fatalf("only %d keys after the log", len(want))
	}
	for _, mode := range []string{"commit", "split"} {
		gotOut, got := run(mode)
		// A record that Apply skipped by the watermark is one Prepare could
		// not skip (the batch before it was not committed yet): the markers
		// decide it.
		skipped := 0
		for i := range wantOut {
			for j, w := range wantOut[i] {
				g := gotOut[i][j]
				if w == Skipped && g != Skipped {
					skipped++
					if g != Applied && g != Duplicate {
						t.Errorf("%s: batch %d record %d: Apply skipped it, outcome %v here", mode, i, j, g)
					}
				} else if g != w {
					t.Errorf("%s: batch %d record %d: outcome %v, %v with Apply", mode, i, j, g, w)
				}
			}
		}
		if skipped != len(parts[4].recs) {
			t.Errorf("%s: %d records decided by the markers instead of the watermark, want the redelivered batch's %d", mode, skipped, len(parts[4].recs))
		}
		compareStates(t, mode, want, got)
	}
}

// TestCommitAfterRollbackPlansAgain: a redelivered batch planned while
// Redis held it (every record below the watermark: the plan skips them all)
// and committed after Redis lost it (the watermark fell, not below the
// batch's start, so there is no gap) is planned again: its records are
// applied, as Apply on the emptied Redis applies them.
func TestCommitAfterRollbackPlansAgain(t *testing.T) {
	recs := smallLog()[:100]
	rng := []Range{{Topic: "shop.views", Partition: 0, First: recs[0].Offset, Last: recs[len(recs)-1].Offset}}
	ctx := context.Background()
	state := func(prepareFirst bool) map[string]string {
		rdb := testredis.StartStandalone(t).Client()
		a := guardedApplier(t, rdb, projections.Defaults(), Guards{GapCheck: true})
		var p *Prepared
		if prepareFirst {
			if _, err := a.Apply(ctx, recs, rng); err != nil {
				t.Fatal(err)
			}
			var err error
			if p, err = a.Prepare(ctx, recs, rng); err != nil {
				t.Fatal(err)
			}
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := testMeta(rdb).Init(ctx, nil); err != nil {
				t.Fatal(err)
			}
		} else if p, _ = a.Prepare(ctx, recs, rng); p == nil {
			t.Fatal("no plan")
		}
		res, err := a.Commit(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range res.Outcomes {
			if o == Skipped {
				t.Fatalf("prepared before the loss %v: record %d skipped", prepareFirst, i)
			}
		}
		return dumpState(t, rdb)
	}
	want, got := state(false), state(true)
	if len(want) < 50 {
		t.Fatalf("only %d keys", len(want))
	}
	compareStates(t, "after the loss", want, got)
}
