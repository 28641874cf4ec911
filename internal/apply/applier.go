// Package apply applies the writes that projections plan to Redis, exactly
// once: writes are grouped by hash slot (one group per user, one global
// group), coalesced, and applied by one Lua script per group that first checks
// the group's guard — idempotency markers for a user's slot, per-partition
// offset watermarks for the global slot — and writes nothing when it was
// already applied.
package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/pkg/events"
	"projector/pkg/projections"
)

// Record is one valid event and where it came from.
type Record struct {
	Topic     string
	Partition int
	Offset    int64
	Event     events.Event
}

// Range is the span of offsets of one partition that a batch covers (valid and
// poison records alike). Its global watermark moves to Last when the batch is applied.
type Range struct {
	Topic     string
	Partition int
	First     int64
	Last      int64
}

// Outcome is what became of one record.
type Outcome uint8

// Outcomes of a record.
const (
	// Applied: its effects are in Redis (now, or by an earlier delivery of the same record).
	Applied Outcome = iota + 1
	// Duplicate: another record with the same event id was applied before.
	Duplicate
	// Skipped: its partition's watermark says the whole record was applied before.
	Skipped
)

// Result reports what Apply did.
type Result struct {
	// Outcomes has one entry per input record.
	Outcomes []Outcome
	// Writes counts the writes the scripts reported as applied.
	Writes int64
	// UserCalls and GlobalCalls count script calls.
	UserCalls, GlobalCalls int
}

// Options configure an Applier.
type Options struct {
	// Window is how long after an event's time duplicates are recognised.
	Window time.Duration
	// Location is the time zone of the calendar buckets.
	Location *time.Location
	// KeyPrefix is redis.key_prefix.
	KeyPrefix string
	// Now is the clock.
	Now func() time.Time
	// IgnoreMeta applies batches whatever px:meta:{g} says (the replayer,
	// which owns the meta status while it rebuilds).
	IgnoreMeta bool
	// CheckOnly makes the user phase only read idempotency markers, never set
	// them (and plan no user writes): a replayer rebuilding global projections
	// while consumers run must not mark records the consumers have yet to
	// apply. Records without a marker are deduplicated in memory instead.
	CheckOnly bool
	// Only, when set, keeps only the writes of the named projections (a
	// replayer rebuilding some projections plans with the consumers' full
	// configuration, so that one projection's effect on another is the same).
	Only map[string]bool
	// Rebuild makes the user phase that of a replayer rebuilding projections
	// while the consumers are paused (see RebuildMode).
	Rebuild RebuildMode
	// GapCheck makes a batch fail with a *GapError, writing nothing global,
	// when a watermark lies below the first offset of the batch's range - 1:
	// Redis went back in time after the records before the batch were
	// applied (the consumer, which then applies them again with Repair).
	GapCheck bool
	// Evidence keeps, on Redis Cluster, each master's own watermarks
	// (px:nwm:{<tag>}), raised after every batch, so that one master going
	// back in time is seen while the others are intact.
	Evidence bool
	// Sync makes every batch wait until its writes reached replicas or the
	// AOF (WAIT, WAITAOF) before Apply returns.
	Sync Sync
	// WatermarkKey replaces px:wm:{g} (a replayer rebuilding one projection
	// keeps its own watermarks; must carry the {g} hash tag).
	WatermarkKey string
}

// Applier applies batches of records to Redis.
type Applier struct {
	rdb     redis.UniversalClient
	planner *projections.Planner
	keys    projections.Keys
	opts    Options
	script  *redis.Script
	seen    map[string]string   // CheckOnly: marker key + id -> origin of unmarked records
	nodes   nodeKeys            // Redis Cluster: each master's px:nwm key
	bufMu   sync.Mutex          // held by the Apply using buf
	buf     []projections.Write // the planned writes of a batch, reused by the next
}

// New returns an Applier writing through rdb.
func New(rdb redis.UniversalClient, planner *projections.Planner, opts Options) *Applier {
	return &Applier{rdb: rdb, planner: planner, keys: projections.Keys{Prefix: opts.KeyPrefix}, opts: opts, script: newScript(),
		seen: map[string]string{}}
}

// LoadScript loads the apply script on every master, so EVALSHA finds it.
func (a *Applier) LoadScript(ctx context.Context) error {
	load := func(ctx context.Context, c *redis.Client) error {
		return a.script.Load(ctx, c).Err()
	}
	var err error
	if cc, ok := a.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, load)
	} else {
		err = a.script.Load(ctx, a.rdb).Err()
	}
	if err != nil {
		return fmt.Errorf("load apply script: %w", err)
	}
	return nil
}

// item is one record on its way through Apply.
type item struct {
	idx       int
	rec       *Record
	user      []projections.Write
	global    []projections.Write
	marker    string
	origin    string
	markerExp int64
	marked    bool // the user phase found this record's marker
}

// originOf is "<topic>:<partition>:<offset>", the value of r's marker.
func originOf(r *Record) string {
	var b [96]byte
	o := append(b[:0], r.Topic...)
	o = append(o, ':')
	o = strconv.AppendInt(o, int64(r.Partition), 10)
	o = append(o, ':')
	return string(strconv.AppendInt(o, r.Offset, 10))
}

func tpField(topic string, partition int) string { return topic + ":" + strconv.Itoa(partition) }

// Apply applies a batch. It is idempotent: calling it again with the same or an
// overlapping batch (after an error, a crash or a redelivery) never applies an
// event twice. An error means Redis did not accept everything; retry later.
func (a *Applier) Apply(ctx context.Context, recs []Record, ranges []Range) (Result, error) {
	return a.applyLoop(ctx, recs, ranges, false)
}

// Repair applies a batch of records that may lie at or below their
// partition's watermark: after Redis went back in time the global watermark
// can be intact while a Redis Cluster master lost the user writes of those
// records, so no record is skipped up front. The idempotency markers decide
// for each user's writes, the watermarks for the global ones, as in Apply.
func (a *Applier) Repair(ctx context.Context, recs []Record, ranges []Range) (Result, error) {
	return a.applyLoop(ctx, recs, ranges, true)
}

func (a *Applier) applyLoop(ctx context.Context, recs []Record, ranges []Range, repair bool) (Result, error) {
	for {
		res, err := a.apply(ctx, recs, ranges, repair)
		if !errors.Is(err, errHoldsChanged) {
			return res, err
		}
	}
}

// apply is one attempt of Apply.
func (a *Applier) apply(ctx context.Context, recs []Record, ranges []Range, repair bool) (Result, error) {
	res := Result{Outcomes: make([]Outcome, len(recs))}
	now := a.opts.Now()
	pipe := a.rdb.Pipeline()
	wmCmd := pipe.HGetAll(ctx, a.wmKey())
	metaCmd := pipe.HGetAll(ctx, a.keys.Meta())
	_, _ = pipe.Exec(ctx)
	wms, err := wmCmd.Result()
	if err != nil {
		return res, fmt.Errorf("read watermarks: %w", err)
	}
	meta, err := metaCmd.Result()
	if err != nil {
		return res, fmt.Errorf("read %s: %w", a.keys.Meta(), err)
	}
	status, held, heldRaw := parseMeta(meta)
	if a.opts.IgnoreMeta {
		held, heldRaw = nil, nil
	} else if status != StatusReady {
		return res, &NotReadyError{Status: status} // checked again atomically by the global script
	}
	if a.opts.GapCheck {
		if err := a.precheck(ctx, ranges, wms); err != nil {
			return res, err
		}
	}
	// The planned writes of a batch take tens of MB: reuse one buffer
	// (sync.Pool would drop it at every other GC), or a new one when another
	// Apply runs at the same time.
	bp := new([]projections.Write)
	if a.bufMu.TryLock() {
		defer a.bufMu.Unlock()
		bp = &a.buf
	}
	skip := wms
	if repair {
		skip = nil
	}
	groups, order := a.plan(recs, skip, now, &res, bp)
	var all []*item
	for _, u := range order {
		all = append(all, groups[u]...)
	}
	if a.opts.Rebuild != RebuildNone {
		if err := a.rebuildUsers(ctx, groups, order, &res); err != nil {
			return res, err
		}
		if a.opts.Rebuild == RebuildMarked {
			return res, nil
		}
	} else if err := a.applyUsers(ctx, groups, order, &res); err != nil {
		return res, err
	}
	var done []*item
	for _, it := range all {
		if a.opts.CheckOnly && res.Outcomes[it.idx] == Applied && !it.marked {
			k := it.marker + "\x00" + it.rec.Event.ID
			if o, ok := a.seen[k]; ok && o != it.origin {
				res.Outcomes[it.idx] = Duplicate
			}
			a.seen[k] = it.origin
		}
		if res.Outcomes[it.idx] == Applied {
			done = append(done, it)
		}
	}
	if err := a.applyGlobal(ctx, done, ranges, wms, held, heldRaw, &res); err != nil {
		return res, err
	}
	if err := a.seal(ctx, ranges); err != nil {
		return res, err
	}
	return res, nil
}

// plan computes every record's writes, drops records at or below their
// partition's watermark in wms (nil: none) and in-batch duplicates, and groups the rest by user.
// The writes go into *bp, which is grown when needed and reused by later batches.
func (a *Applier) plan(recs []Record, wms map[string]string, now time.Time, res *Result, bp *[]projections.Write) (map[string][]*item, []string) {
	groups := make(map[string][]*item, len(recs))
	var order []string
	seen := make(map[string]bool, len(recs))
	buf := (*bp)[:0] // every record's writes, in one array
	if cap(buf) < 20*len(recs) {
		buf = make([]projections.Write, 0, 20*len(recs))
	}
	defer func() { *bp = buf }()
	window := a.opts.Window.Milliseconds()
	var scratch []projections.Write
	items := make([]item, len(recs)) // one allocation for the batch's items
	for i := range recs {
		r := &recs[i]
		if wm, ok := wms[tpField(r.Topic, r.Partition)]; ok {
			if w, err := strconv.ParseInt(wm, 10, 64); err == nil && r.Offset <= w {
				res.Outcomes[i] = Skipped
				continue
			}
		}
		ev := &r.Event
		var b projections.Buckets
		if a.opts.Location == a.planner.Location() {
			b = a.planner.Buckets(ev.TS) // cached per hour
		} else {
			b = projections.BucketsOf(ev.TS, a.opts.Location)
		}
		it := &items[i]
		*it = item{idx: i, rec: r, marker: a.keys.Seen(ev.UserID, b.Day),
			origin:    originOf(r),
			markerExp: max(b.DayEnd+window, now.UnixMilli()+window)}
		dk := it.marker + "\x00" + ev.ID
		if seen[dk] {
			res.Outcomes[i] = Duplicate
			continue
		}
		seen[dk] = true
		n := len(buf)
		buf = a.planner.Plan(*ev, now, buf)
		ws := buf[n:len(buf):len(buf)]
		// the planner puts the user's writes first: split them from the
		// global ones; or (projections selected, or a planner that did not)
		// keep the selected writes of each kind in order (the global ones
		// wait in scratch)
		u := 0
		for u < len(ws) && !ws[u].Global {
			u++
		}
		k := len(ws)
		split := a.opts.Only == nil
		for i := u; i < k && split; i++ {
			split = ws[i].Global
		}
		if !split {
			u = 0
			scratch = scratch[:0]
			for i := range ws {
				w := &ws[i]
				if !a.opts.Only[w.Projection] {
					continue
				}
				if w.Global {
					scratch = append(scratch, *w)
				} else {
					if u != i {
						ws[u] = *w
					}
					u++
				}
			}
			k = u + copy(ws[u:], scratch)
		}
		it.user, it.global = ws[:u:u], ws[u:k:k]
		if _, ok := groups[ev.UserID]; !ok {
			order = append(order, ev.UserID)
		}
		groups[ev.UserID] = append(groups[ev.UserID], it)
	}
	return groups, order
}

// wmKey is the hash of the per-partition watermarks this applier guards with.
func (a *Applier) wmKey() string {
	if a.opts.WatermarkKey != "" {
		return a.opts.WatermarkKey
	}
	return a.keys.Watermarks()
}

// errHoldsChanged says a replayer changed a hold after the batch was planned.
var errHoldsChanged = errors.New("projection holds changed while the batch was applied")

// NotReadyError says the meta hash px:meta:{g} is missing (Redis lost its
// data, or was never initialised) or not "ready" (a replay is running): the
// batch was not completed and must not be committed.
type NotReadyError struct {
	// Status is the meta status ("" when the hash is missing).
	Status string
}

func (e *NotReadyError) Error() string {
	if e.Status == "" {
		return "redis holds no projector meta hash (px:meta:{g}): data lost or never initialised"
	}
	return "projections not ready: meta status " + e.Status
}

// isNoScript reports whether err says the script is not loaded on a node.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
