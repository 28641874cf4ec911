package naive

import (
	"context"
	"strings"
	"testing"
	"time"

	"projector/internal/gen"
	"projector/internal/testing/refmodel"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// The naive consumer must leave exactly the keys the reference model expects
// (and so the real pipeline writes) for a generated log with duplicates,
// poison, out-of-order events and history events.
func TestNaiveMatchesReferenceModel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string
		scope  []string
	}{
		{"defaults", "", nil},
		{"prefix and scoped history", "shop:", []string{"device", "store"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testredis.StartStandalone(t)
			ctx := context.Background()
			start := time.Now()
			cfg := projections.Defaults()
			cfg.History.Scope = tc.scope
			gc := gen.DefaultConfig()
			gc.Users, gc.Products = 40, 60
			gc.Start, gc.Span = start.Add(-36*time.Hour), 36*time.Hour
			log := gen.New(gc).Log(4000)
			planner, err := projections.NewPlanner(cfg, time.UTC, tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			a := New(srv.Client(), planner, Options{Window: 24 * time.Hour, KeyPrefix: tc.prefix, Now: func() time.Time { return start }})
			var applied, dups int
			for _, r := range log {
				ev, err := events.Decode(r.Value)
				if err != nil {
					if !r.Poison {
						t.Fatalf("valid record rejected: %v", err)
					}
					continue
				}
				ok, err := a.Apply(ctx, ev)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					applied++
				} else {
					dups++
				}
			}
			if dups == 0 || applied < 3000 {
				t.Fatalf("applied %d, duplicates %d: the log exercises too little", applied, dups)
			}
			opts := refmodel.Options{Projections: cfg, Location: time.UTC, KeyPrefix: tc.prefix, Window: 24 * time.Hour, Now: start}
			want := refmodel.Expected(opts, log)
			opts.Settle = time.Now().Add(5 * time.Second)
			if diffs := refmodel.Compare(ctx, srv.Client(), want, opts, time.Second); len(diffs) > 0 {
				t.Errorf("%d differences from the model, first ones:\n%s", len(diffs), strings.Join(diffs[:min(len(diffs), 20)], "\n"))
			}
			if len(want) < 500 {
				t.Errorf("model holds only %d keys", len(want))
			}
			if a.Commands < int64(10*applied) {
				t.Errorf("%d commands for %d events: not one command per write", a.Commands, applied)
			}
		})
	}
}
