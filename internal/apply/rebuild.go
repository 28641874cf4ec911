package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// RebuildMode selects how a Rebuilder applies user writes.
type RebuildMode uint8

const (
	// RebuildAll is for records whose batch the consumers completed: a record
	// is applied unless its marker names another record (a duplicate); one
	// without a marker (expired) is deduplicated in memory. Markers are read,
	// never set; global writes follow, guarded by the watermarks.
	RebuildAll RebuildMode = iota + 1
	// RebuildMarked is for records after the consumers' watermarks: only those
	// whose marker names this very record (a batch whose user phase a consumer
	// applied before the pause, whose writes the wipe removed) get their user
	// writes again; the consumers complete their global writes themselves.
	RebuildMarked
)

// Rebuilder applies the writes of selected projections with per-user keys
// for a replayer rebuilding them while the consumers are paused: their
// markers do not change meanwhile, so reading them first and writing after
// is safe.
type Rebuilder struct {
	core
	wmKey string
	mode  RebuildMode
	seen  unmarked
}

// NewRebuilder returns a Rebuilder in mode writing through rdb.
func NewRebuilder(rdb redis.UniversalClient, planner *projections.Planner, opts Options, sel Selection, mode RebuildMode) *Rebuilder {
	return &Rebuilder{core: newCore(rdb, planner, opts, sel.Only), wmKey: sel.WatermarkKey, mode: mode, seen: unmarked{}}
}

// Apply applies the user writes of a batch's records as its mode says,
// then (RebuildAll) their global writes, guarded by the replayer's watermarks.
func (a *Rebuilder) Apply(ctx context.Context, recs []Record, ranges []Range) (Result, error) {
	b, release, err := a.planAfter(ctx, recs, ranges, a.wmKey)
	if err != nil {
		return b.res, err
	}
	defer release()
	if err := a.rebuildUsers(ctx, b); err != nil || a.mode == RebuildMarked {
		return b.res, err
	}
	return b.res, a.applyGlobal(ctx, b, globalGuard{wmKey: a.wmKey, mode: modeGlobal})
}

// rebuildUsers reads the markers of every record, decides which records to
// apply, and sends their user writes.
func (a *Rebuilder) rebuildUsers(ctx context.Context, b *batch) error {
	origins, err := a.readMarkers(ctx, b.all)
	if err != nil {
		return err
	}
	byUser := make(map[string][]projections.Write, len(b.order))
	for i, it := range b.all {
		b.res.Outcomes[it.idx] = a.outcome(it, origins[i])
		if b.res.Outcomes[it.idx] == Applied {
			byUser[it.rec.Event.UserID] = append(byUser[it.rec.Event.UserID], it.user...)
		}
	}
	return a.writeUsers(ctx, b, byUser)
}

// readMarkers returns the origin each record's marker names ("" when none).
func (a *Rebuilder) readMarkers(ctx context.Context, items []*item) ([]string, error) {
	pipe := a.rdb.Pipeline()
	marks := make([]*redis.StringCmd, len(items))
	for i, it := range items {
		marks[i] = pipe.HGet(ctx, it.marker, it.rec.Event.ID)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read idempotency markers: %w", err)
	}
	origins := make([]string, len(items))
	for i, m := range marks {
		o, err := m.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read marker of event %s: %w", items[i].rec.Event.ID, err)
		}
		origins[i] = o
	}
	return origins, nil
}

// writeUsers sends each user's writes (coalesced) as an unguarded write
// program, MODE_USER with no markers: one call per user, pipelined.
func (a *Rebuilder) writeUsers(ctx context.Context, b *batch, byUser map[string][]projections.Write) error {
	var calls [][]any
	var names []string
	for _, u := range b.order {
		if len(byUser[u]) == 0 {
			continue
		}
		ws := Coalesce(byUser[u])
		call := a.script.start(2+argCount(ws), ws[0].Key)
		calls, names = append(calls, appendWrites(append(call, modeUser.arg(), 0), ws)), append(names, u)
	}
	for i, cmd := range a.script.exec(ctx, a.rdb, calls, nil) {
		b.res.UserCalls++
		r, err := replyOf(cmd, 0)
		if err == nil && r.code != replyApplied {
			err = r.unexpected()
		}
		if err != nil {
			return fmt.Errorf("rebuild user %q: %w", names[i], err)
		}
		b.res.Writes += r.writes
	}
	return nil
}

// outcome decides a record's fate from its marker ("" when none).
func (a *Rebuilder) outcome(it *item, origin string) Outcome {
	switch {
	case origin == it.origin:
		it.marked = true
		return Applied
	case origin != "":
		return Duplicate
	case a.mode == RebuildMarked:
		return Skipped // the consumers apply it when they resume
	case a.seen.duplicate(it):
		return Duplicate
	}
	return Applied
}
