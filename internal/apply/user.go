package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply/wire"
	"projector/pkg/projections"
)

// Users of a batch go to Redis in pipelines of userChunk script calls, up to
// chunksInFlight at once, so the consumer encodes one pipeline while Redis
// runs another. Each call touches one user's slot and is atomic on its own:
// the order between users does not matter.
const (
	userChunk      = 256
	chunksInFlight = 3
)

// applyUsers runs the user step of b's groups: script calls of one or
// several users (see applyUserChunk), in concurrent pipelines of userChunk
// users.
func (c *Core) applyUsers(ctx context.Context, b *Batch) error {
	if len(b.order) <= userChunk {
		return c.applyUserChunk(ctx, b.groups, b.order, &b.res)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, chunksInFlight)
	)
	for start := 0; start < len(b.order); start += userChunk {
		chunk := b.order[start:min(start+userChunk, len(b.order))]
		own := make(map[string][]*Item, len(chunk)) // each chunk rewrites only its own groups
		for _, u := range chunk {
			own[u] = b.groups[u]
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			part := Result{Outcomes: b.res.Outcomes} // each record's outcome is written by its own chunk only
			err := c.applyUserChunk(ctx, own, chunk, &part)
			mu.Lock()
			defer mu.Unlock()
			b.res.Writes += part.Writes
			b.res.UserCalls += part.UserCalls
			if err != nil && first == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	return first
}

// ApplyUsers runs the user step for the given items of b: groups holds
// each user's items in log order, order the users. Each user's markers are
// set with its writes; an item whose marker exists is settled as in Apply
// (Applied when the marker names it, else Duplicate). It is the
// replayer's user step for records without a marker (a Rebuilder's).
func (c *Core) ApplyUsers(ctx context.Context, b *Batch, groups map[string][]*Item, order []string) error {
	part := &Batch{groups: groups, order: order, res: Result{Outcomes: b.res.Outcomes}}
	err := c.applyUsers(ctx, part)
	b.res.Writes += part.res.Writes
	b.res.UserCalls += part.res.UserCalls
	return err
}

// ReadMarkers returns the origin each record's marker holds ("" when none).
func (c *Core) ReadMarkers(ctx context.Context, items []*Item) ([]string, error) {
	pipe := c.rdb.Pipeline()
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

// applyUserChunk runs the script calls of the user groups in order,
// pipelined: one call per group, or, when the core's perCall allows (a
// standalone server), one ModeUsers call per perCall groups of together at
// most callRecords records (a user with more gets a call of its own), so
// that no call blocks the server for long. A group whose
// markers are found loses those events (duplicates, or redeliveries whose
// user effects are already applied) and is tried again with the rest.
func (c *Core) applyUserChunk(ctx context.Context, groups map[string][]*Item, order []string, res *Result) error {
	pending := order
	var gc groupCoalescer
	for len(pending) > 0 {
		gc.reset() // the writes of these calls stay put until they are sent
		gc.reserve(groups, pending)
		per := max(c.perCall, 1)
		var next []string
		var calls [][]any
		var users [][]string // the users of each call
		for start := 0; start < len(pending); {
			end, recs := start, 0
			for end < len(pending) && end-start < per && (end == start || recs+len(groups[pending[end]]) <= callRecords) {
				recs += len(groups[pending[end]])
				end++
			}
			us := pending[start:end]
			start = end
			if len(us) == 1 {
				calls = append(calls, c.userCall(groups[us[0]], &gc))
			} else {
				calls = append(calls, c.usersCall(groups, us, &gc))
			}
			users = append(users, us)
		}
		cmds := c.script.Exec(ctx, c.rdb, calls, nil)
		for i, us := range users {
			res.UserCalls++
			var err error
			if len(us) == 1 {
				next, err = settleUser(groups, us[0], cmds[i], res, next)
			} else {
				next, err = settleUsers(groups, us, cmds[i], res, next)
			}
			if err != nil {
				return err
			}
		}
		pending = next
	}
	return nil
}

// userCall returns the call of one user group g: EVALSHA sha 1 key
// ModeUser n markers... writes..., built in one slice that go-redis sends as
// it is (pointers into g and gc: see wire.Script.Start).
func (c *Core) userCall(g []*Item, gc *groupCoalescer) []any {
	ws := gc.of(g)
	call := c.script.Start(2+3+2*len(g)+wire.ArgCount(ws), &g[0].marker)
	call = append(call, wire.ModeUser.Arg(), len(g))
	call = appendMarkers(call, g)
	return wire.AppendWrites(call, ws)
}

// usersCall returns the ModeUsers call of the groups of us: per user its
// marker count, markers, the length of its write program and the program.
// Only its first key is declared (a standalone server routes nothing).
func (c *Core) usersCall(groups map[string][]*Item, us []string, gc *groupCoalescer) []any {
	wss := make([][]projections.Write, len(us))
	n := 2
	for i, u := range us {
		g := groups[u]
		wss[i] = gc.of(g)
		n += 5 + 2*len(g) + wire.ArgCount(wss[i])
	}
	call := c.script.Start(n, &groups[us[0]][0].marker)
	call = append(call, wire.ModeUsers.Arg(), len(us))
	for i, u := range us {
		g := groups[u]
		call = append(call, len(g))
		call = appendMarkers(call, g)
		w := len(call)
		call = wire.AppendWrites(append(call, 0), wss[i])
		call[w] = len(call) - w - 1
	}
	return call
}

// appendMarkers encodes the markers of g's records in runs of one marker
// hash and expiry (pointers: g must not change until the command has been
// sent).
func appendMarkers(args []any, g []*Item) []any {
	for j := 0; j < len(g); {
		k := j + 1
		for k < len(g) && g[k].marker == g[j].marker && g[k].markerExp == g[j].markerExp {
			k++
		}
		args = wire.AppendMarkerRun(args, &g[j].marker, &g[j].markerExp, k-j)
		for _, it := range g[j:k] {
			args = wire.AppendMarker(args, &it.rec.Event.ID, &it.origin)
		}
		j = k
	}
	return args
}

// settleUser reads the reply of user u's own call and returns next with u
// appended when records of u are still to apply: those without a marker,
// when others had one (groups[u] then holds them).
func settleUser(groups map[string][]*Item, u string, cmd *redis.Cmd, res *Result, next []string) ([]string, error) {
	g := groups[u]
	r, err := wire.ReplyOf(cmd, len(g))
	if err != nil {
		return nil, fmt.Errorf("apply user %q: %w", u, err)
	}
	switch r.Code {
	case wire.ReplyApplied:
		markApplied(g, res)
		res.Writes += r.Writes
		return next, nil
	case wire.ReplyFound:
	default:
		return nil, fmt.Errorf("apply user %q: %w", u, r.Unexpected())
	}
	return settleHits(groups, u, r.Hits, res, next), nil
}

// settleUsers reads the reply of a ModeUsers call of the users us, as
// settleUser does for each of them.
func settleUsers(groups map[string][]*Item, us []string, cmd *redis.Cmd, res *Result, next []string) ([]string, error) {
	sizes := make([]int, len(us))
	for i, u := range us {
		sizes[i] = len(groups[u])
	}
	vals, err := cmd.Slice()
	if err != nil {
		return nil, fmt.Errorf("apply users %q..: %w", us[0], err)
	}
	writes, found, err := wire.DecodeUsersReply(vals, sizes)
	if err != nil {
		return nil, fmt.Errorf("apply users %q..: %w", us[0], err)
	}
	res.Writes += writes
	for i, u := range us {
		if hits, ok := found[i]; ok {
			next = settleHits(groups, u, hits, res, next)
		} else {
			markApplied(groups[u], res)
		}
	}
	return next, nil
}

// markApplied records the records of g as markApplied.
func markApplied(g []*Item, res *Result) {
	for _, it := range g {
		res.Outcomes[it.idx] = Applied
	}
}

// settleHits records the records of user u whose markers a call found
// (hits) and keeps the others in groups[u], appending u to next when there
// are any.
func settleHits(groups map[string][]*Item, u string, hits []wire.Hit, res *Result, next []string) []string {
	g := groups[u]
	for _, h := range hits {
		it := g[h.At]
		it.marked = true
		if it.NamesRecord(h.Value) || it.Adopt(h.Value, res) {
			res.Outcomes[it.idx] = Applied // this very record was applied before (by a rebuild too)
		} else {
			res.Outcomes[it.idx] = Duplicate
		}
	}
	rest := make([]*Item, 0, len(g)-len(hits))
	for _, it := range g {
		if !it.marked {
			rest = append(rest, it)
		}
	}
	if len(rest) == 0 {
		return next
	}
	groups[u] = rest
	return append(next, u)
}

// callRecords bounds the records of the users of one ModeUsers call.
const callRecords = 256
