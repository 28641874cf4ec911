package projections

import (
	"testing"
	"time"

	"projector/pkg/events"
)

// BenchmarkPlan measures planning one event with every projection on.
func BenchmarkPlan(b *testing.B) {
	ts := now.Add(-time.Minute).UnixMilli()
	for _, bc := range []struct {
		name string
		ev   events.Event
	}{
		{"view", events.Event{ID: "e1", Type: events.View, TS: ts, UserID: "u4242", ProductID: "p123", Device: "ios", StoreID: "s1"}},
		{"click", events.Event{ID: "e2", Type: events.Click, TS: ts, UserID: "u4242"}},
		{"order", events.Event{ID: "o1", Type: events.Order, TS: ts, UserID: "u4242",
			Items: []events.Item{{ProductID: "p1", Quantity: 2, PriceCents: 1999}, {ProductID: "p2", Quantity: 1, PriceCents: 500}}}},
	} {
		p, err := NewPlanner(Defaults(), time.UTC, "")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var out []Write
			for b.Loop() {
				out = p.Plan(bc.ev, now, out[:0])
			}
			b.ReportMetric(float64(len(out)), "writes/op")
		})
	}
}

// BenchmarkBucketsOf measures the calendar buckets of one instant.
func BenchmarkBucketsOf(b *testing.B) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		b.Fatal(err)
	}
	ts := now.UnixMilli()
	for _, loc := range []*time.Location{time.UTC, ny} {
		b.Run(loc.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = BucketsOf(ts, loc)
			}
		})
	}
}
