package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply/wire"
	"projector/internal/coord"
	"projector/pkg/projections"
)

// Core is what every applier shares: the client, the planner, the keys,
// the apply script and the buffer of a batch's planned writes.
type Core struct {
	rdb     redis.UniversalClient
	planner *projections.Planner
	keys    projections.Keys
	opts    Options
	only    map[string]bool // the projections whose writes are kept (nil: all)
	script  *wire.Script
	// perCall is how many user groups one script call may apply (1: one
	// call per user; more on a standalone server, see usersPerCall).
	perCall int
	bufMu   sync.Mutex            // guards bufs
	bufs    [][]projections.Write // free buffers for a batch's planned writes (writeBuffer)
}

func NewCore(rdb redis.UniversalClient, planner *projections.Planner, opts Options, only map[string]bool) *Core {
	return &Core{rdb: rdb, planner: planner, keys: projections.Keys{Prefix: opts.KeyPrefix}, opts: opts, only: only,
		script: wire.ApplyScript(), perCall: usersPerCall(rdb, opts.UsersPerCall)}
}

// Exec sends script calls (GuardedCall's) in one pipeline and returns
// their commands, in order.
func (c *Core) Exec(ctx context.Context, calls [][]any) []*redis.Cmd {
	return c.script.Exec(ctx, c.rdb, calls, nil)
}

// Keys are the key names under the configured prefix.
func (c *Core) Keys() projections.Keys { return c.keys }

// LoadScript loads the apply script on every server, so that EVALSHA finds
// it from the first batch on (a server that lost it gets it again by EVAL).
func (c *Core) LoadScript(ctx context.Context) error { return c.script.Load(ctx, c.rdb) }

// PlanAfter starts a batch under the watermark hash wmKey: it reads the
// watermarks and plans the records after them (release ends the plan, see plan).
func (c *Core) PlanAfter(ctx context.Context, recs []Record, ranges []Range, wmKey string) (*Batch, func(), error) {
	b := newBatch(recs, ranges)
	wms, err := c.rdb.HGetAll(ctx, wmKey).Result()
	if err != nil {
		return b, nil, fmt.Errorf("read watermarks %s: %w", wmKey, err)
	}
	b.wms = wms
	return b, c.plan(b, wms), nil
}

// writeBuffer returns a buffer of at least n writes for a batch's planned
// writes, and done, which keeps the (grown) buffer for a later batch. The
// writes of a batch take tens of MB: up to keptBuffers buffers are reused
// (sync.Pool would drop them at every other GC), enough for a replay lane's
// batch in its global phase, the next in its user phase and the one after
// it planned (Prepare); more at once get new ones.
func (c *Core) writeBuffer(n int) ([]projections.Write, func([]projections.Write)) {
	c.bufMu.Lock()
	var buf []projections.Write
	if k := len(c.bufs); k > 0 {
		buf, c.bufs = c.bufs[k-1][:0], c.bufs[:k-1]
	}
	c.bufMu.Unlock()
	if cap(buf) < n {
		buf = make([]projections.Write, 0, n)
	}
	return buf, func(grown []projections.Write) {
		c.bufMu.Lock()
		if len(c.bufs) < keptBuffers {
			c.bufs = append(c.bufs, grown)
		}
		c.bufMu.Unlock()
	}
}

// keptBuffers is how many write buffers a core keeps (writeBuffer).
const keptBuffers = 3

// Batch is one attempt of Apply on its way through the phases.
type Batch struct {
	recs   []Record
	ranges []Range
	// wms are the watermarks read when the attempt started.
	wms map[string]string
	// held are the holds the batch is planned with, heldRaw their meta
	// fields as (field, value) pairs (none: nil).
	held    coord.Holds
	heldRaw []string
	// groups holds the records still to apply per user (the user phase
	// shrinks it), order the users by their first record, and all every
	// planned record in that order.
	groups map[string][]*Item
	order  []string
	all    []*Item
	res    Result
}

// Items are the batch's planned records, grouped by user in the order of
// each user's first record.
func (b *Batch) Items() []*Item { return b.all }

// Users are the batch's users in the order of their first record.
func (b *Batch) Users() []string { return b.order }

// Result is what became of the batch's records so far.
func (b *Batch) Result() *Result { return &b.res }

func newBatch(recs []Record, ranges []Range) *Batch {
	return &Batch{recs: recs, ranges: ranges, res: Result{Outcomes: make([]Outcome, len(recs))}}
}

// applied returns the planned records whose outcome is Applied, in plan order.
func (b *Batch) applied() []*Item {
	var done []*Item
	for _, it := range b.all {
		if b.res.Outcomes[it.idx] == Applied {
			done = append(done, it)
		}
	}
	return done
}
