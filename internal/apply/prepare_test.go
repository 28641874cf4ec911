package apply

import (
	"context"
	"testing"

	"projector/internal/testredis"
	"projector/pkg/projections"
)

// TestPrepareAheadEqualsApply: the generator's log (duplicates, out-of-order
// events, orders, history clears) applied in batches, each batch planned by
// Prepare before the batch ahead of it is committed, and a redelivered batch
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
	run := func(ahead bool) ([][]Outcome, map[string]string) {
		rdb := testredis.StartStandalone(t).Client()
		a := newTestApplier(t, rdb, projections.Defaults())
		var outs [][]Outcome
		if !ahead {
			for _, p := range parts {
				res, err := a.Apply(ctx, p.recs, p.rng)
				if err != nil {
					t.Fatal(err)
				}
				outs = append(outs, res.Outcomes)
			}
			return outs, dumpState(t, rdb)
		}
		next, err := a.Prepare(ctx, parts[0].recs, parts[0].rng)
		if err != nil {
			t.Fatal(err)
		}
		for i := range parts {
			cur := next
			if i+1 < len(parts) {
				if next, err = a.Prepare(ctx, parts[i+1].recs, parts[i+1].rng); err != nil {
					t.Fatal(err)
				}
			}
			res, err := a.Commit(ctx, cur)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, res.Outcomes)
		}
		return outs, dumpState(t, rdb)
	}
	wantOut, want := run(false)
	gotOut, got := run(true)
	if len(want) < 100 {
		t.Fatalf("only %d keys after the log", len(want))
	}
	// A record that Apply skipped by the watermark is one Prepare could not
	// skip (the batch before it was not committed yet): the markers decide it.
	skipped := 0
	for i := range wantOut {
		for j, w := range wantOut[i] {
			g := gotOut[i][j]
			if w == Skipped && g != Skipped {
				skipped++
				if g != Applied && g != Duplicate {
					t.Errorf("batch %d record %d: Apply skipped it, Prepare ahead gave outcome %v", i, j, g)
				}
			} else if g != w {
				t.Errorf("batch %d record %d: outcome %v with Prepare ahead, %v with Apply", i, j, g, w)
			}
		}
	}
	if skipped != len(parts[4].recs) {
		t.Errorf("%d records decided by the markers instead of the watermark, want the redelivered batch's %d", skipped, len(parts[4].recs))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: Apply %q, Prepare ahead %q", k, v, got[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s only with Prepare ahead", k)
		}
	}
}
