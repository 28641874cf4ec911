package refmodel

import (
	"testing"
	"time"

	"projector/pkg/projections"
)

func TestDiffSettleIgnoresKeysExpiringDuringTheRun(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	opts := Options{Projections: projections.Defaults(), Now: now}
	want := State{
		"trend:{g}:2026-12-02T09:59": {Kind: KindZSet, ZSet: map[string]float64{"p1": 1}, ExpireAtMs: now.Add(30 * time.Second).UnixMilli()},
		"st:{g}:views:2026":          {Kind: KindString, Str: "1"},
	}
	got := State{"st:{g}:views:2026": {Kind: KindString, Str: "1"}}
	if d := Diff(want, got, opts, time.Second); len(d) != 1 {
		t.Fatalf("without Settle the missing key must be reported: %v", d)
	}
	opts.Settle = now.Add(time.Minute)
	if d := Diff(want, got, opts, time.Second); len(d) != 0 {
		t.Fatalf("a key expiring before Settle may be missing: %v", d)
	}
	got["st:{g}:views:2026"] = Value{Kind: KindString, Str: "2"}
	if d := Diff(want, got, opts, time.Second); len(d) != 1 {
		t.Fatalf("Settle must not hide other differences: %v", d)
	}
}
