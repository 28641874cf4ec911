// Package rebuild holds the appliers of a replayer that rebuilds selected
// projections while the consumers run and leave them out: CheckOnly for
// global projections (held and cut), Rebuilder for per-user ones (chased).
// They run the apply engine's steps (internal/apply) under watermarks of
// their own; docs/design/coordination.md describes the protocol around them.
package rebuild

import (
	"context"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply"
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
	base
	seen unmarked
}

// NewCheckOnly returns a CheckOnly writing through rdb.
func NewCheckOnly(rdb redis.UniversalClient, planner *projections.Planner, opts apply.Options, sel Selection) *CheckOnly {
	return &CheckOnly{base: newBase(rdb, planner, opts, sel), seen: unmarked{}}
}

// Apply applies the global writes of a batch's records that were not
// applied before, guarded by the replayer's watermarks.
func (a *CheckOnly) Apply(ctx context.Context, recs []apply.Record, ranges []apply.Range) (apply.Result, error) {
	b, markers, release, err := a.planMarked(ctx, recs, ranges)
	defer release()
	if err != nil {
		return *b.Result(), err
	}
	res := b.Result()
	for i, it := range b.Items() {
		m := markers[i]
		switch {
		case m == "" && a.seen.duplicate(it), m != "" && (!it.NamesRecord(m) || a.seen.other(it)):
			res.Outcomes[it.Index()] = apply.Duplicate
		default:
			res.Outcomes[it.Index()] = apply.Applied
		}
	}
	err = a.c.ApplyGlobal(ctx, b, a.wmKey)
	return *res, err
}

// base is what both appliers share: the engine's steps and the replayer's
// watermarks.
type base struct {
	c     *apply.Core
	wmKey string
}

func newBase(rdb redis.UniversalClient, planner *projections.Planner, opts apply.Options, sel Selection) base {
	return base{c: apply.NewCore(rdb, planner, opts, sel.Only), wmKey: sel.WatermarkKey}
}

// LoadScript loads the apply script on every server.
func (a *base) LoadScript(ctx context.Context) error { return a.c.LoadScript(ctx) }

// planMarked plans the records after the replayer's watermarks and reads
// the origin each one's marker holds ("" when none); a record whose marker
// names one of its in-batch copies becomes that copy (Item.Adopt). release
// ends the plan (also after an error).
func (a *base) planMarked(ctx context.Context, recs []apply.Record, ranges []apply.Range) (*apply.Batch, []string, func(), error) {
	b, release, err := a.c.PlanAfter(ctx, recs, ranges, a.wmKey)
	if err != nil {
		return b, nil, func() {}, err
	}
	markers, err := a.c.ReadMarkers(ctx, b.Items())
	if err != nil {
		return b, nil, release, err
	}
	for i, it := range b.Items() {
		if m := markers[i]; m != "" && !it.NamesRecord(m) {
			it.Adopt(m, b.Result())
		}
	}
	return b, markers, release, nil
}

// unmarked deduplicates in memory, across the batches of one replay, the
// records whose idempotency marker is gone (expired): marker key + event id
// -> origin of the first such record.
type unmarked map[string]string

// duplicate reports whether another record with its marker key and event
// id came before; it remembers it otherwise.
func (u unmarked) duplicate(it *apply.Item) bool {
	k := it.MarkerKey() + "\x00" + it.Record().Event.ID
	if o, ok := u[k]; ok && o != it.Origin() {
		return true
	}
	u[k] = it.Origin()
	return false
}

// other reports whether a record with its marker key and event id but
// another origin was applied without a marker before (a copy that the replay
// reached before a consumer marked this one).
func (u unmarked) other(it *apply.Item) bool {
	o, ok := u[it.MarkerKey()+"\x00"+it.Record().Event.ID]
	return ok && o != it.Origin()
}
