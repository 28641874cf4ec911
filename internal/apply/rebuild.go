package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// RebuildMode selects how a replayer applies user writes while it rebuilds
// projections with per-user keys and the consumers are paused (their markers
// do not change meanwhile, so reading them first and writing after is safe).
type RebuildMode uint8

const (
	// RebuildNone is the consumers' mode: markers guard and are set atomically.
	RebuildNone RebuildMode = iota
	// RebuildAll is for records whose batch the consumers completed: a record
	// is applied unless its marker names another record (a duplicate); one
	// without a marker (expired) is deduplicated in memory. Markers are read,
	// never set; global writes follow, guarded by the watermarks.
	RebuildAll
	// RebuildMarked is for records after the consumers' watermarks: only those
	// whose marker names this very record (a batch whose user phase a consumer
	// applied before the pause, whose writes the wipe removed) get their user
	// writes again; the consumers complete their global writes themselves.
	RebuildMarked
)

// rebuildUsers reads the markers of every record, decides which records to
// apply, and sends their user writes, one script call per user, pipelined.
func (a *Applier) rebuildUsers(ctx context.Context, groups map[string][]*item, order []string, res *Result) error {
	pipe := a.rdb.Pipeline()
	marks := map[*item]*redis.StringCmd{}
	for _, u := range order {
		for _, it := range groups[u] {
			marks[it] = pipe.HGet(ctx, it.marker, it.rec.Event.ID)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read idempotency markers: %w", err)
	}
	var users [][]projections.Write
	var names []string
	for _, u := range order {
		var ws []projections.Write
		for _, it := range groups[u] {
			origin, err := marks[it].Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("read marker of event %s: %w", it.rec.Event.ID, err)
			}
			res.Outcomes[it.idx] = a.rebuildOutcome(it, origin)
			if res.Outcomes[it.idx] == Applied {
				ws = append(ws, it.user...)
			}
		}
		if len(ws) > 0 {
			users, names = append(users, Coalesce(ws)), append(names, u)
		}
	}
	return a.writeUsers(ctx, users, names, res)
}

// rebuildOutcome decides a record's fate from its marker ("" when none).
func (a *Applier) rebuildOutcome(it *item, origin string) Outcome {
	switch {
	case origin == it.origin:
		it.marked = true
		return Applied
	case origin != "":
		return Duplicate
	case a.opts.Rebuild == RebuildMarked:
		return Skipped // the consumers apply it when they resume
	}
	k := it.marker + "\x00" + it.rec.Event.ID
	if o, ok := a.seen[k]; ok && o != it.origin {
		return Duplicate
	}
	a.seen[k] = it.origin
	return Applied
}

// writeUsers sends unguarded write programs (mode u with no markers), one per user.
func (a *Applier) writeUsers(ctx context.Context, users [][]projections.Write, names []string, res *Result) error {
	for len(users) > 0 {
		pipe := a.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(users))
		for i, ws := range users {
			args := appendWrites(append(make([]any, 0, 2+10*len(ws)), "u", "0"), ws)
			cmds[i] = a.script.EvalSha(ctx, pipe, []string{ws[0].Key}, args...)
		}
		_, _ = pipe.Exec(ctx)
		var retry [][]projections.Write
		var retryNames []string
		for i, cmd := range cmds {
			res.UserCalls++
			vals, err := cmd.Slice()
			if isNoScript(err) {
				retry, retryNames = append(retry, users[i]), append(retryNames, names[i])
				continue
			}
			if err != nil {
				return fmt.Errorf("rebuild user %q: %w", names[i], err)
			}
			if len(vals) > 1 {
				n, _ := vals[1].(int64)
				res.Writes += n
			}
		}
		if len(retry) > 0 {
			if err := a.LoadScript(ctx); err != nil {
				return err
			}
		}
		users, names = retry, retryNames
	}
	return nil
}
