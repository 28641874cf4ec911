package apply

import (
	"testing"
	"time"

	"projector/internal/apply/wire"
	"projector/pkg/projections"
)

// BenchmarkEncode encodes the user groups of a 20,000-event batch (1,000
// users) as script arguments; ns/op is per batch.
func BenchmarkEncode(b *testing.B) {
	now := time.Now()
	p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		b.Fatal(err)
	}
	a := New(nil, p, Options{Window: 24 * time.Hour, Location: time.UTC, Now: func() time.Time { return now }}, Guards{})
	recs := benchLog(b, 20000, 1000, now)
	bt := newBatch(recs, nil)
	defer a.plan(bt, nil)()
	groups, order := bt.groups, bt.order
	var gc groupCoalescer
	b.ResetTimer()
	n := 0
	for range b.N {
		gc.reset()
		for _, u := range order {
			ws := gc.of(groups[u])
			args := wire.AppendWrites(make([]any, 0, wire.ArgCount(ws)), ws)
			n += len(args)
		}
	}
	b.ReportMetric(float64(n)/float64(b.N)/float64(len(recs)), "args/ev")
}
