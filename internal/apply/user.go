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

// applyUsers runs one script per user group, in concurrent pipelines of
// userChunk users (see applyUserChunk).
func (a *Applier) applyUsers(ctx context.Context, groups map[string][]*item, order []string, res *Result) error {
	if len(order) <= userChunk {
		return a.applyUserChunk(ctx, groups, order, res)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, chunksInFlight)
	)
	for start := 0; start < len(order); start += userChunk {
		chunk := order[start:min(start+userChunk, len(order))]
		own := make(map[string][]*item, len(chunk)) // each chunk rewrites only its own groups
		for _, u := range chunk {
			own[u] = groups[u]
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			part := Result{Outcomes: res.Outcomes} // each record's outcome is written by its own chunk only
			err := a.applyUserChunk(ctx, own, chunk, &part)
			mu.Lock()
			defer mu.Unlock()
			res.Writes += part.Writes
			res.UserCalls += part.UserCalls
			if err != nil && first == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	return first
}

// applyUserChunk runs one script per user group, pipelined. A group whose
// script finds markers loses those events (duplicates, or redeliveries whose
// user effects are already applied) and is tried again with the rest.
func (a *Applier) applyUserChunk(ctx context.Context, groups map[string][]*item, order []string, res *Result) error {
	pending := order
	var gc groupCoalescer
	sha := a.script.Hash()
	mode := "u"
	if a.opts.CheckOnly {
		mode = "c"
	}
	for len(pending) > 0 {
		pipe := a.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(pending))
		gc.reset() // the writes of this pipeline stay put until it is sent
		for i, u := range pending {
			g := groups[u]
			var ws []projections.Write
			if !a.opts.CheckOnly {
				ws = gc.of(g)
			}
			// EVALSHA sha 1 key mode n markers... writes..., built here in one
			// slice that go-redis sends as it is
			args := make([]any, 0, 6+3+2*len(g)+argCount(ws))
			args = append(args, "evalsha", sha, "1", &g[0].marker, mode, len(g))
			args = appendMarkers(args, g)
			args = appendWrites(args, ws)
			cmds[i] = redis.NewCmd(ctx, args...)
			_ = pipe.Process(ctx, cmds[i])
		}
		_, _ = pipe.Exec(ctx)
		var next []string
		for i, u := range pending {
			res.UserCalls++
			vals, err := cmds[i].Slice()
			if isNoScript(err) {
				if err := a.LoadScript(ctx); err != nil {
					return err
				}
				next = append(next, u)
				continue
			}
			if err != nil {
				return fmt.Errorf("apply user %q: %w", u, err)
			}
			rest, err := a.settleUser(groups[u], vals, res)
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

// settleUser reads a user script's reply. It returns the events still to apply.
func (a *Applier) settleUser(g []*item, vals []any, res *Result) ([]*item, error) {
	if len(vals) == 0 {
		return nil, fmt.Errorf("empty script reply")
	}
	if ok, _ := vals[0].(int64); ok == 1 {
		for _, it := range g {
			res.Outcomes[it.idx] = Applied
		}
		if len(vals) > 1 {
			n, _ := vals[1].(int64)
			res.Writes += n
		}
		return nil, nil
	}
	hit := map[int]bool{}
	for j := 1; j+1 < len(vals); j += 2 {
		idx, _ := vals[j].(int64)
		origin, _ := vals[j+1].(string)
		if idx < 1 || int(idx) > len(g) {
			return nil, fmt.Errorf("script reply names marker %d of %d", idx, len(g))
		}
		it := g[idx-1]
		it.marked = true
		hit[int(idx-1)] = true
		if origin == it.origin {
			res.Outcomes[it.idx] = Applied // this very record was applied before
		} else {
			res.Outcomes[it.idx] = Duplicate
		}
	}
	var rest []*item
	for j, it := range g {
		if !hit[j] {
			rest = append(rest, it)
		}
	}
	return rest, nil
}
