package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

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

// applyUsers runs one script call per user group of b in mode m (modeUser
// or modeCheck), in concurrent pipelines of userChunk users (see applyUserChunk).
func (c *core) applyUsers(ctx context.Context, b *batch, m mode) error {
	if len(b.order) <= userChunk {
		return c.applyUserChunk(ctx, b.groups, b.order, &b.res, m)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, chunksInFlight)
	)
	for start := 0; start < len(b.order); start += userChunk {
		chunk := b.order[start:min(start+userChunk, len(b.order))]
		own := make(map[string][]*item, len(chunk)) // each chunk rewrites only its own groups
		for _, u := range chunk {
			own[u] = b.groups[u]
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			part := Result{Outcomes: b.res.Outcomes} // each record's outcome is written by its own chunk only
			err := c.applyUserChunk(ctx, own, chunk, &part, m)
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

// applyUserChunk runs one script call per user group, pipelined. A group
// whose call finds markers loses those events (duplicates, or redeliveries
// whose user effects are already applied) and is tried again with the rest.
// In modeCheck the calls carry no writes.
func (c *core) applyUserChunk(ctx context.Context, groups map[string][]*item, order []string, res *Result, m mode) error {
	pending := order
	var gc groupCoalescer
	for len(pending) > 0 {
		calls := make([][]any, len(pending))
		gc.reset() // the writes of these calls stay put until they are sent
		for i, u := range pending {
			g := groups[u]
			var ws []projections.Write
			if m == modeUser {
				ws = gc.of(g)
			}
			// EVALSHA sha 1 key mode n markers... writes..., built in one
			// slice that go-redis sends as it is
			call := c.script.start(2+3+2*len(g)+argCount(ws), &g[0].marker)
			call = append(call, m.arg(), len(g))
			call = appendMarkers(call, g)
			calls[i] = appendWrites(call, ws)
		}
		cmds := c.script.exec(ctx, c.rdb, calls, nil)
		var next []string
		for i, u := range pending {
			res.UserCalls++
			rest, err := settleUser(groups[u], cmds[i], res)
			if err != nil {
				return fmt.Errorf("apply user %q: %w", u, err)
			}
			if len(rest) > 0 {
				groups[u] = rest
				next = append(next, u)
			}
		}
		pending = next
	}
	return nil
}

// appendMarkers encodes the markers of g's records in runs of one marker
// hash: key, expiry, count, then (event id, origin) per record (pointers: g
// must not change until the command has been sent).
func appendMarkers(args []any, g []*item) []any {
	for j := 0; j < len(g); {
		k := j + 1
		for k < len(g) && g[k].marker == g[j].marker && g[k].markerExp == g[j].markerExp {
			k++
		}
		args = append(args, &g[j].marker, &g[j].markerExp, k-j)
		for _, it := range g[j:k] {
			args = append(args, &it.rec.Event.ID, &it.origin)
		}
		j = k
	}
	return args
}

// settleUser reads the reply of a user group's call. It returns the
// records still to apply: those without a marker, when others had one.
func settleUser(g []*item, cmd *redis.Cmd, res *Result) ([]*item, error) {
	r, err := replyOf(cmd, len(g))
	if err != nil {
		return nil, err
	}
	switch r.code {
	case replyApplied:
		for _, it := range g {
			res.Outcomes[it.idx] = Applied
		}
		res.Writes += r.writes
		return nil, nil
	case replyFound:
	default:
		return nil, r.unexpected()
	}
	for _, h := range r.hits {
		it := g[h.at]
		it.marked = true
		if h.value == it.origin {
			res.Outcomes[it.idx] = Applied // this very record was applied before
		} else {
			res.Outcomes[it.idx] = Duplicate
		}
	}
	rest := make([]*item, 0, len(g)-len(r.hits))
	for _, it := range g {
		if !it.marked {
			rest = append(rest, it)
		}
	}
	return rest, nil
}
