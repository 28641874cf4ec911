package wire

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// Unguarded applies writes by the apply script's rules with no idempotency
// markers and no watermarks: at least once (a write sent twice is applied
// twice). The benchmark's at-least-once peer and naive baseline apply their
// writes through it, so that they carry out each write exactly as the
// appliers do and differ from them only in what exactly-once adds.
type Unguarded struct {
	rdb    redis.UniversalClient
	script *Script
}

// NewUnguarded returns an Unguarded writing through rdb.
func NewUnguarded(rdb redis.UniversalClient) *Unguarded {
	return &Unguarded{rdb: rdb, script: ApplyScript()}
}

// Apply applies each group of writes, in order, in one script call of its
// own, all calls in one pipeline; the writes of a group must share a hash
// slot (one user's, or the global ones). It returns the writes the script
// reported as applied.
func (u *Unguarded) Apply(ctx context.Context, groups [][]projections.Write) (int64, error) {
	calls := make([][]any, 0, len(groups))
	for _, ws := range groups {
		if len(ws) == 0 {
			continue
		}
		call := u.script.Start(2+ArgCount(ws), &ws[0].Key)
		call = append(call, ModeUser.Arg(), 0) // no markers
		calls = append(calls, AppendWrites(call, ws))
	}
	var applied int64
	for _, cmd := range u.script.Exec(ctx, u.rdb, calls, nil) {
		r, err := ReplyOf(cmd, 0)
		if err != nil {
			return applied, fmt.Errorf("apply unguarded writes: %w", err)
		}
		if r.Code != ReplyApplied {
			return applied, fmt.Errorf("apply unguarded writes: %w", r.Unexpected())
		}
		applied += r.Writes
	}
	return applied, nil
}

// Groups gathers a batch's planned writes as Unguarded applies them: one
// group per user in the order of their first write, then one of the global
// writes, each in the order added.
type Groups struct {
	index  map[string]int
	users  [][]projections.Write
	global []projections.Write
}

// Add adds the planned writes of one event of user (copied: ws may be reused).
func (g *Groups) Add(user string, ws []projections.Write) {
	for _, w := range ws {
		if w.Global {
			g.global = append(g.global, w)
			continue
		}
		i, ok := g.index[user]
		if !ok {
			if g.index == nil {
				g.index = map[string]int{}
			}
			i = len(g.users)
			g.index[user] = i
			g.users = append(g.users, nil)
		}
		g.users[i] = append(g.users[i], w)
	}
}

// All returns the groups: the users', then the global one.
func (g *Groups) All() [][]projections.Write { return append(g.users, g.global) }
