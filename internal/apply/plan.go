package apply

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply/wire"
	"projector/internal/coord"
	"projector/internal/offsets"
	"projector/pkg/projections"
)

// Item is one record on its way through Apply.
type Item struct {
	idx       int
	rec       *Record
	user      []projections.Write
	global    []projections.Write
	marker    string
	origin    string
	markerExp int64
	marked    bool // the user phase found this record's marker
	// copies are the batch's later records with the same marker hash and
	// event id (in-batch duplicates, described but not planned): when the
	// marker names one of them, that copy is the one applied (adopt).
	copies []*Item
}

// TagSep separates a record's origin from the tag of the rebuild that set
// its marker (Kafka topic names never hold it).
const TagSep = "~"

// SplitMarker splits what a marker holds into the origin of the record it
// names and the tag of the rebuild that set it (tagged false: a consumer's).
func SplitMarker(marker string) (origin, tag string, tagged bool) {
	return strings.Cut(marker, TagSep)
}

// NamesRecord reports whether a marker (tagged by a rebuild or not) names
// this very record.
func (it *Item) NamesRecord(marker string) bool {
	origin, _, _ := SplitMarker(marker)
	return origin == it.origin
}

// Index is the item's position among the batch's records (its Outcome's).
func (it *Item) Index() int { return it.idx }

// Record is the item's record.
func (it *Item) Record() *Record { return it.rec }

// Origin is the item's origin, <topic>:<partition>:<offset>, and the tag
// of a rebuild that marks it (Tag).
func (it *Item) Origin() string { return it.origin }

// MarkerKey is the marker hash of the item's record (its user's day).
func (it *Item) MarkerKey() string { return it.marker }

// UserWrites are the item's user writes.
func (it *Item) UserWrites() []projections.Write { return it.user }

// Tag makes the marker the user step sets for the item name the rebuild tag.
func (it *Item) Tag(tag string) { it.origin += TagSep + tag }

// Adopt makes it the copy among its in-batch duplicates that marker names
// (a consumer applied that copy first, in another partition or an earlier
// batch), so that the record the marker names is the one applied, and
// reports whether one was named. The copies carry the same event, so the
// planned writes stay; it keeps its place among the user's records and
// the copy it swapped with holds the record it was.
func (it *Item) Adopt(marker string, res *Result) bool {
	base, _, _ := SplitMarker(marker)
	for _, cp := range it.copies {
		if cp.origin == base {
			it.idx, cp.idx = cp.idx, it.idx
			it.rec, cp.rec = cp.rec, it.rec
			it.origin, cp.origin = cp.origin, it.origin
			res.Outcomes[cp.idx] = Duplicate
			return true
		}
	}
	return false
}

// plan computes the writes of b's records and groups them by user (b.groups,
// b.order, b.all), leaving out the records at or below their partition's
// watermark in skip (nil: none) and in-batch duplicates, and the user
// writes of projections held for the record (b.held; the global ones are
// left out when the global call is built). The writes live in
// the core's buffer until the returned function is called.
func (c *Core) plan(b *Batch, skip map[string]string) (release func()) {
	buf, keep := c.writeBuffer(20 * len(b.recs)) // every record's writes, in one array
	now := c.opts.Now()
	items := make([]Item, len(b.recs)) // one allocation for the batch's items
	seen := make(map[string]*Item, len(b.recs))
	b.groups = make(map[string][]*Item, len(b.recs))
	var scratch []projections.Write
	applied := parseWatermarks(skip)
	for i := range b.recs {
		r := &b.recs[i]
		if w, ok := applied[r.TP()]; ok && r.Offset <= w {
			b.res.Outcomes[i] = Skipped
			continue
		}
		it := &items[i]
		c.describe(it, i, r, now)
		dk := it.marker + "\x00" + r.Event.ID
		if first := seen[dk]; first != nil {
			b.res.Outcomes[i] = Duplicate
			first.copies = append(first.copies, it)
			continue
		}
		seen[dk] = it
		n := len(buf)
		buf = c.planner.Plan(r.Event, now, buf)
		it.user, it.global = c.split(buf[n:len(buf):len(buf)], &scratch)
		if len(b.held) > 0 {
			it.user = b.held.Keep(it.user, r.TP().String(), r.Offset)
		}
		if _, ok := b.groups[r.Event.UserID]; !ok {
			b.order = append(b.order, r.Event.UserID)
		}
		b.groups[r.Event.UserID] = append(b.groups[r.Event.UserID], it)
	}
	for _, u := range b.order {
		b.all = append(b.all, b.groups[u]...)
	}
	return func() { keep(buf) }
}

// parseWatermarks returns the watermarks of wms that parse, by partition
// (once per batch: formatting each record's partition for wms would cost
// an allocation per record).
func parseWatermarks(wms map[string]string) map[offsets.TopicPartition]int64 {
	if len(wms) == 0 {
		return nil
	}
	out := make(map[offsets.TopicPartition]int64, len(wms))
	for f, v := range wms {
		tp, err := offsets.ParseTopicPartition(f)
		if err != nil {
			continue
		}
		if w, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[tp] = w
		}
	}
	return out
}

// describe fills in it for record i: its marker hash (the user's day of the
// event), origin and the marker's expiry (a window after the later of the
// day's end and now).
func (c *Core) describe(it *Item, i int, r *Record, now time.Time) {
	ev := &r.Event
	var b projections.Buckets
	if c.opts.Location == c.planner.Location() {
		b = c.planner.Buckets(ev.TS) // cached per hour
	} else {
		b = projections.BucketsOf(ev.TS, c.opts.Location)
	}
	window := c.opts.Window.Milliseconds()
	*it = Item{idx: i, rec: r, marker: c.keys.Seen(ev.UserID, b.Day), origin: offsets.Origin(r.Topic, r.Partition, r.Offset),
		markerExp: max(b.DayEnd+window, now.UnixMilli()+window)}
}

// split splits one record's writes ws into the user's and the global ones.
// The planner puts the user's writes first; when projections are selected
// (c.only), or a planner did not, the selected writes of each kind are
// moved into that order in ws (the global ones wait in scratch).
func (c *Core) split(ws []projections.Write, scratch *[]projections.Write) (user, global []projections.Write) {
	u := 0
	for u < len(ws) && !ws[u].Global {
		u++
	}
	k := len(ws)
	ordered := c.only == nil
	for i := u; i < k && ordered; i++ {
		ordered = ws[i].Global
	}
	if !ordered {
		u = 0
		*scratch = (*scratch)[:0]
		for i := range ws {
			w := &ws[i]
			if c.only != nil && !c.only[w.Projection] {
				continue
			}
			if w.Global {
				*scratch = append(*scratch, *w)
			} else {
				if u != i {
					ws[u] = *w
				}
				u++
			}
		}
		k = u + copy(ws[u:], *scratch)
	}
	return ws[:u:u], ws[u:k:k]
}

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

// usersPerCallStandalone is how many user groups one script call applies on
// a standalone server: the call's fixed cost (its body, its arguments'
// framing) is shared by its users, and more users per call bring little
// more while a longer call delays the commands queued behind it
// (BENCHMARKS.md, the price of Lua).
const usersPerCallStandalone = 64

// usersPerCall returns how many user groups one call may apply through rdb:
// one on Redis Cluster (a call's keys must share a slot), else asked
// (Options.UsersPerCall), by default usersPerCallStandalone.
func usersPerCall(rdb redis.UniversalClient, asked int) int {
	if _, ok := rdb.(*redis.ClusterClient); ok {
		return 1
	}
	if asked > 0 {
		return asked
	}
	return usersPerCallStandalone
}
