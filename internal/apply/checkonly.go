package apply

import (
	"context"
	"projector/internal/apply/wire"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// Selection is what a replayer rebuilding some projections applies: their
// writes alone, planned with the consumers' full configuration (so that one
// projection's effect on another stays the same), under watermarks of its own.
type Selection struct {
	// Only names the projections whose writes are kept.
	Only map[string]bool
	// WatermarkKey is the hash of the replayer's watermarks (it must carry
	// the {g} hash tag).
	WatermarkKey string
	// Tag names the rebuild in the markers a Rebuilder sets (a rebuild
	// resumed after a crash keeps it).
	Tag string
}

// CheckOnly applies the global writes of selected projections for a
// replayer rebuilding them while the consumers run (and hold them). It
// only reads the idempotency markers (a consumer's, or one a Rebuilder set),
// never sets them, and plans no user writes: it must not mark records the
// consumers have yet to apply.
// Records without a marker (expired) are deduplicated in memory across the
// batches of the replay.
type CheckOnly struct {
	core
	wmKey string
	seen  unmarked
}

// NewCheckOnly returns a CheckOnly writing through rdb.
func NewCheckOnly(rdb redis.UniversalClient, planner *projections.Planner, opts Options, sel Selection) *CheckOnly {
	return &CheckOnly{core: newCore(rdb, planner, opts, sel.Only), wmKey: sel.WatermarkKey, seen: unmarked{}}
}

// Apply applies the global writes of a batch's records that were not
// applied before, guarded by the replayer's watermarks.
func (a *CheckOnly) Apply(ctx context.Context, recs []Record, ranges []Range) (Result, error) {
	b, release, err := a.planAfter(ctx, recs, ranges, a.wmKey)
	if err != nil {
		return b.res, err
	}
	defer release()
	markers, err := a.readMarkers(ctx, b.all)
	if err != nil {
		return b.res, err
	}
	for i, it := range b.all {
		m := markers[i]
		if m != "" && !namesRecord(m, it) {
			it.adopt(m, &b.res)
		}
		switch {
		case m == "" && a.seen.duplicate(it), m != "" && (!namesRecord(m, it) || a.seen.other(it)):
			b.res.Outcomes[it.idx] = Duplicate
		default:
			b.res.Outcomes[it.idx] = Applied
		}
	}
	return b.res, a.applyGlobal(ctx, b, globalGuard{wmKey: a.wmKey, mode: wire.ModeGlobal})
}
