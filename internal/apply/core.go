package apply

import (
	"context"
	"fmt"
	"projector/internal/apply/wire"
	"sync"

	"github.com/redis/go-redis/v9"

	"projector/internal/coord"
	"projector/pkg/projections"
)

// core is what every applier shares: the client, the planner, the keys,
// the apply script and the buffer of a batch's planned writes.
type core struct {
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

func newCore(rdb redis.UniversalClient, planner *projections.Planner, opts Options, only map[string]bool) core {
	return core{rdb: rdb, planner: planner, keys: projections.Keys{Prefix: opts.KeyPrefix}, opts: opts, only: only,
		script: wire.ApplyScript(), perCall: usersPerCall(rdb)}
}

// LoadScript loads the apply script on every server, so that EVALSHA finds
// it from the first batch on (a server that lost it gets it again by EVAL).
func (c *core) LoadScript(ctx context.Context) error { return c.script.Load(ctx, c.rdb) }

// planAfter starts a batch under the watermark hash wmKey: it reads the
// watermarks and plans the records after them (release ends the plan, see plan).
func (c *core) planAfter(ctx context.Context, recs []Record, ranges []Range, wmKey string) (*batch, func(), error) {
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
func (c *core) writeBuffer(n int) ([]projections.Write, func([]projections.Write)) {
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

// batch is one attempt of Apply on its way through the phases.
type batch struct {
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
	groups map[string][]*item
	order  []string
	all    []*item
	res    Result
}

func newBatch(recs []Record, ranges []Range) *batch {
	return &batch{recs: recs, ranges: ranges, res: Result{Outcomes: make([]Outcome, len(recs))}}
}

// applied returns the planned records whose outcome is Applied, in plan order.
func (b *batch) applied() []*item {
	var done []*item
	for _, it := range b.all {
		if b.res.Outcomes[it.idx] == Applied {
			done = append(done, it)
		}
	}
	return done
}

// unmarked deduplicates in memory, across the batches of one replay, the
// records whose idempotency marker is gone (expired): marker key + event id
// -> origin of the first such record.
type unmarked map[string]string

// duplicate reports whether another record with its marker key and event
// id came before; it remembers it otherwise.
func (u unmarked) duplicate(it *item) bool {
	k := it.marker + "\x00" + it.rec.Event.ID
	if o, ok := u[k]; ok && o != it.origin {
		return true
	}
	u[k] = it.origin
	return false
}

// other reports whether a record with its marker key and event id but
// another origin was applied without a marker before (a copy that the replay
// reached before a consumer marked this one).
func (u unmarked) other(it *item) bool {
	o, ok := u[it.marker+"\x00"+it.rec.Event.ID]
	return ok && o != it.origin
}
