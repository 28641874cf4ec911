package apply

import (
	"context"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply/wire"
	"projector/pkg/projections"
)

// applyPeer is BenchmarkLevers' at-least-once reference, what cmd/bench's
// peer sends: every planned write of every event (not coalesced) by the
// apply script's rules without markers or watermarks (Unguarded), one call
// per user and one for the global writes, all of a batch in one pipeline.
func applyPeer(ctx context.Context, a *Applier, rdb *redis.Client, recs []Record, _ []Range) error {
	now := a.opts.Now()
	var g wire.Groups
	var ws []projections.Write
	for i := range recs {
		ws = a.planner.Plan(recs[i].Event, now, ws[:0])
		g.Add(recs[i].Event.UserID, ws)
	}
	_, err := wire.NewUnguarded(rdb).Apply(ctx, g.All())
	return err
}
