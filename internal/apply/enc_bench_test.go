package apply

import (
	"testing"
	"time"

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
	a := New(nil, p, Options{Window: 24 * time.Hour, Location: time.UTC, Now: time.Now})
	recs := benchLog(b, 20000, 1000, now)
	var res Result
	res.Outcomes = make([]Outcome, len(recs))
	groups, order := a.plan(recs, nil, now, &res, new([]projections.Write))
	var gc groupCoalescer
	b.ResetTimer()
	n := 0
	for range b.N {
		gc.reset()
		for _, u := range order {
			ws := gc.of(groups[u])
			args := appendWrites(make([]any, 0, argCount(ws)), ws)
			n += len(args)
		}
	}
	b.ReportMetric(float64(n)/float64(b.N)/float64(len(recs)), "args/ev")
}
