package replay

import (
	"context"
	"strings"
	"testing"

	"projector/internal/coord"
	"projector/internal/testing/testredis"
)

// TestInterruptedPlan: only status rebuilding with a recorded plan is an
// interrupted replay, and only for the projections it recorded.
func TestInterruptedPlan(t *testing.T) {
	p := replayPlan{Projections: []string{"last_viewed", "stats"}, ToLatest: true,
		Spans: ranges{{Topic: "shop.views", Partition: 0, First: 0, End: 10}}}
	meta := map[string]string{"status": "rebuilding", coord.FieldPlan: p.encode()}
	got, err := interrupted(coord.Parse(meta), []string{"last_viewed", "stats"}, "px:meta:{g}")
	if err != nil || got == nil || !got.ToLatest || got.Spans.String() != "shop.views/0:[0,10)" {
		t.Fatalf("interrupted = %+v, %v; want the recorded plan", got, err)
	}
	if _, err := interrupted(coord.Parse(meta), []string{"last_viewed"}, "px:meta:{g}"); err == nil || !strings.Contains(err.Error(), "records an interrupted replay of last_viewed,stats") {
		t.Errorf("other projections: %v, want a refusal naming the recorded ones", err)
	}
	for _, m := range []map[string]string{{"status": "rebuilding"}, {"status": "rolled_back", coord.FieldPlan: p.encode()}, {}} {
		if got, err := interrupted(coord.Parse(m), p.Projections, "px:meta:{g}"); got != nil || err != nil {
			t.Errorf("meta %v: %+v, %v; want no interrupted replay (start over)", m, got, err)
		}
	}
	if _, err := interrupted(coord.Parse(map[string]string{"status": "rebuilding", coord.FieldPlan: "{"}), p.Projections, "px:meta:{g}"); err == nil {
		t.Errorf("a plan that does not decode was accepted")
	}
}

// TestDryRunOfResumedReplay says what a resumed replay would read.
func TestDryRunOfResumedReplay(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	rdb.HSet(ctx, "px:wm:{g}", "shop.views:0", 39)
	var out strings.Builder
	plan := ranges{{Topic: "shop.views", Partition: 0, First: 0, End: 100}, {Topic: "shop.views", Partition: 1, First: 0, End: 50}}
	if err := dryRun(ctx, &out, rdb, "", []string{"stats"}, plan, true); err != nil {
		t.Fatal(err)
	}
	want := "would resume the interrupted replay recorded in px:meta:{g} (40 of 150 records applied), read 110 records (shop.views/0:[40,100) shop.views/1:[0,50))"
	if !strings.Contains(out.String(), want) {
		t.Errorf("dry run said %q, want %q", out.String(), want)
	}
}
