package apply_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"projector/internal/apply"
	"projector/internal/apply/rebuild"
	"projector/internal/coord"
	"projector/internal/gen"
	"projector/internal/testing/refmodel"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// TestExploreInterleavings is a stateful property test: rapid draws a
// schedule of steps — events produced (duplicates of clicks and orders also
// in the other partition, late and backfilled events, poison), consumer
// batches applied whole or in two steps (user phase now, global phase
// later) by two consumers that may hold the same partition after a
// rebalance, crashes between the user and the global phase, Redis going
// back to an earlier snapshot, and the steps of a rebuild (hold, wipe, chase
// rounds, pause, handover; or hold, cut, replay, release for global
// projections) — and runs them on a real redis-server through the real
// appliers (Applier, Rebuilder, CheckOnly). After the schedule every
// consumer catches up and every projection key must equal the reference
// model of the log. A failure shrinks to a minimal schedule that rapid
// prints with the seed that replays it (-rapid.seed=N); -rapid.checks=N
// sets the number of schedules per path (`make soak` runs more). It runs
// over every path the appliers take (script calls of many users or of one,
// on Redis 7.0, Valkey 8.1 and a 3-master cluster): the conformance
// suite of the apply paths, each held to the model.
func TestExploreInterleavings(t *testing.T) {
	for _, p := range explorePaths() {
		t.Run(p.name, func(t *testing.T) {
			var rdb redis.UniversalClient
			switch {
			case p.cluster:
				rdb = testredis.StartCluster(t, 3).Client()
			case p.valkey:
				rdb = testredis.StartStandalone(t, testredis.WithValkey()).Client()
			default:
				rdb = testredis.StartStandalone(t).Client()
			}
			schedules, steps := 0, 0
			rapid.Check(t, func(rt *rapid.T) {
				schedules++
				x := newExplorer(rt, rdb, p)
				for range 4 { // rapid's Repeat takes about -rapid.steps (30) steps: schedules of about 120
					rt.Repeat(rapid.StateMachineActions(x))
				}
				x.drain()
				x.compare()
				steps += x.step
			})
			t.Logf("explored %d schedules, %d steps", schedules, steps)
		})
	}
}

// explorePath is one way the appliers apply user writes, on one kind of
// server: the exploration is the conformance suite of every path.
type explorePath struct {
	name            string
	cluster, valkey bool
	perCall         int // users per script call (0: the default)
}

// explorePaths lists the paths explored: EXPLORE_PATHS=<name>,... picks some.
func explorePaths() []explorePath {
	all := []explorePath{
		{name: "redis-scripts"},
		{name: "redis-script-per-user", perCall: 1},
		{name: "valkey-scripts", valkey: true},
		{name: "cluster", cluster: true, perCall: 1},
	}
	pick := os.Getenv("EXPLORE_PATHS")
	if pick == "" {
		return all
	}
	var out []explorePath
	for _, p := range all {
		if slices.Contains(strings.Split(pick, ","), p.name) {
			out = append(out, p)
		}
	}
	return out
}

// Sizes of the explored world: two partitions of one topic, a few users
// and products, consumer batches of at most maxBatch records per partition.
const (
	xTopic    = "shop.x"
	xParts    = 2
	xUsers    = 3
	xProducts = 3
	maxBatch  = 4
)

// xrec is one record of the explored log.
type xrec struct {
	part   int
	off    int64
	ev     events.Event
	poison bool
}

// inflight is a consumer batch whose user phase ran and whose global phase
// is still to come; born is the step it was planned at.
type inflight struct {
	p      *apply.Prepared
	recs   []apply.Record
	ranges []apply.Range
	born   int
	redo   bool // Redis went back in time meanwhile: apply the batch again whole
}

// xconsumer is one consumer: the partitions it holds, where it reads next
// in each, and its batch in flight.
type xconsumer struct {
	a    *apply.Applier
	held [xParts]bool
	pos  [xParts]int64
	fly  *inflight
}

// xrebuild is a rebuild in progress: its projections, its steps so far.
type xrebuild struct {
	names  []string
	global bool // held and cut (global projections alone), else chased
	id     string
	since  int  // the step its sync or pause token was set at
	wiped  bool // chase: keys wiped, chasing
	paused bool
	token  string           // chase: the pause token
	cut    map[string]int64 // hold: the cut, once set
	lease  *coord.Lease
}

// explorer is the state machine: the real Redis and appliers, and the
// model of the log and the group's committed offsets.
type explorer struct {
	t         *rapid.T
	ctx       context.Context
	rdb       redis.UniversalClient
	now       time.Time
	cfg       projections.Config
	planner   *projections.Planner
	coord     *coord.Meta
	path      explorePath
	log       [xParts][]xrec
	produced  []gen.Record // in production order, for the model
	committed [xParts]int64
	cons      [2]*xconsumer
	rb        *xrebuild
	snap      []snapKey
	step      int
	seq       int
	trace     []string // the steps that ran, for a failure's report
}

// note records a step that ran.
func (x *explorer) note(format string, args ...any) {
	x.trace = append(x.trace, fmt.Sprintf(format, args...))
}

// snapKey is one key of a snapshot of Redis.
type snapKey struct {
	key  string
	dump string
	pttl time.Duration
}

func newExplorer(t *rapid.T, rdb redis.UniversalClient, path explorePath) *explorer {
	ctx := context.Background()
	flushAll(t, ctx, rdb)
	now := time.Now()
	cfg := rapid.SampledFrom(exploreConfigs()).Draw(t, "config")
	p, err := projections.NewPlanner(cfg, time.UTC, "")
	if err != nil {
		t.Fatal(err)
	}
	x := &explorer{t: t, ctx: ctx, rdb: rdb, now: now, cfg: cfg, planner: p, coord: coord.New(rdb, "", time.Now), path: path}
	opts := x.options()
	for i := range x.cons {
		a := apply.New(rdb, p, opts, apply.Guards{GapCheck: true, Evidence: true})
		if err := a.LoadScript(ctx); err != nil {
			t.Fatal(err)
		}
		x.cons[i] = &xconsumer{a: a}
	}
	x.cons[0].held = [xParts]bool{true, true}
	if _, err := apply.NewMeta(rdb, "", opts.Now, true).Init(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return x
}

// exploreConfigs are the projection settings a schedule runs with: the
// defaults, and small sizes and lifetimes shorter than the events' ages
// (up to 6 h; backfills 9-40 days), so that sets are trimmed by size and by
// time, entries die and writes are skipped.
func exploreConfigs() []projections.Config {
	tight := projections.Defaults()
	tight.LastViewed.Size, tight.LastViewed.TTL = 2, 3*time.Hour
	tight.History.Size, tight.History.Retention = 3, 2*time.Hour
	tight.Orders.TTL = 4 * time.Hour
	tight.RecentOrders.Keep = 30 * time.Minute
	tight.Stats.HourTTL = 5 * time.Hour
	return []projections.Config{projections.Defaults(), tight}
}

// options are the appliers' options: the explored path's users per call.
func (x *explorer) options() apply.Options {
	return apply.Options{Window: 24 * time.Hour, Location: time.UTC, Now: func() time.Time { return x.now }, UsersPerCall: x.path.perCall}
}

// flushAll empties every master.
func flushAll(t *rapid.T, ctx context.Context, rdb redis.UniversalClient) {
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.FlushAll(ctx).Err() })
	} else {
		err = rdb.FlushAll(ctx).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Check runs after every step: nothing to check until the end (a rebuild
// in progress leaves projections incomplete on purpose).
func (x *explorer) Check(*rapid.T) { x.step++ }

// userPart is the partition a user's records are keyed to.
func userPart(u string) int { n, _ := strconv.Atoi(strings.TrimPrefix(u, "u")); return n % xParts }

// publish appends ev (or a poison record) to partition part.
func (x *explorer) publish(part int, ev events.Event, poison bool) {
	r := xrec{part: part, off: int64(len(x.log[part])), ev: ev, poison: poison}
	x.log[part] = append(x.log[part], r)
	if poison {
		x.note("publish %d:%d poison", part, r.off)
	} else {
		x.note("publish %d:%d %s %s %s %s ts-now=%v", part, r.off, ev.ID, ev.Type, ev.UserID, ev.ProductID, time.UnixMilli(ev.TS).Sub(x.now).Round(time.Minute))
	}
	if poison {
		x.produced = append(x.produced, gen.Record{Topic: xTopic, Poison: true, Value: []byte("{")})
		return
	}
	v, err := events.Encode(ev)
	if err != nil {
		x.t.Fatal(err)
	}
	x.produced = append(x.produced, gen.Record{Topic: xTopic, Key: []byte(ev.UserID), Value: v, ID: ev.ID})
}

// Produce publishes a fresh event: late by up to 6 h, or backfilled 9-40 days.
func (x *explorer) Produce(t *rapid.T) {
	x.seq++
	user := "u" + strconv.Itoa(rapid.IntRange(1, xUsers).Draw(t, "user"))
	product := "p" + strconv.Itoa(rapid.IntRange(1, xProducts).Draw(t, "product"))
	age := time.Duration(rapid.IntRange(0, 6*60).Draw(t, "minutes")) * time.Minute
	if rapid.IntRange(0, 9).Draw(t, "backfill") == 0 {
		age = time.Duration(rapid.IntRange(9, 40).Draw(t, "days")) * 24 * time.Hour
	}
	ev := events.Event{ID: "e" + strconv.Itoa(x.seq), TS: x.now.Add(-age).UnixMilli(), UserID: user}
	switch rapid.SampledFrom([]events.Type{events.View, events.View, events.Click, events.Order, events.HistoryCleared, events.HistoryItemRemoved}).Draw(t, "type") {
	case events.View:
		ev.Type, ev.ProductID, ev.Device, ev.StoreID = events.View, product, "-", "-"
	case events.Click:
		ev.Type = events.Click
	case events.Order:
		ev.Type = events.Order
		ev.Items = []events.Item{{ProductID: product, Quantity: int64(rapid.IntRange(1, 3).Draw(t, "qty")), PriceCents: 100}}
	case events.HistoryCleared:
		ev.Type = events.HistoryCleared
	case events.HistoryItemRemoved:
		ev.Type, ev.ProductID = events.HistoryItemRemoved, product
	}
	x.publish(userPart(user), ev, false)
}

// Duplicate publishes an earlier event again: a click or order in either
// partition, a view in its own.
func (x *explorer) Duplicate(t *rapid.T) {
	var cands []events.Event
	for p := range x.log {
		for _, r := range x.log[p] {
			if !r.poison && (r.ev.Type == events.Click || r.ev.Type == events.Order || r.ev.Type == events.View) {
				cands = append(cands, r.ev)
			}
		}
	}
	if len(cands) == 0 {
		t.Skip("nothing to duplicate")
	}
	ev := rapid.SampledFrom(cands).Draw(t, "original")
	part := userPart(ev.UserID)
	if ev.Type != events.View {
		part = rapid.IntRange(0, xParts-1).Draw(t, "partition")
	}
	x.publish(part, ev, false)
}

// Poison publishes a record that is not an event.
func (x *explorer) Poison(t *rapid.T) {
	x.publish(rapid.IntRange(0, xParts-1).Draw(t, "partition"), events.Event{}, true)
}

// next returns consumer c's next batch: up to n records of each partition
// it holds, from its positions.
func (x *explorer) next(c *xconsumer, n int) ([]apply.Record, []apply.Range) {
	var recs []apply.Record
	var ranges []apply.Range
	for p := range xParts {
		if !c.held[p] || c.pos[p] >= int64(len(x.log[p])) {
			continue
		}
		end := min(c.pos[p]+int64(n), int64(len(x.log[p])))
		for _, r := range x.log[p][c.pos[p]:end] {
			if !r.poison {
				recs = append(recs, apply.Record{Topic: xTopic, Partition: p, Offset: r.off, Event: r.ev})
			}
		}
		ranges = append(ranges, apply.Range{Topic: xTopic, Partition: p, First: c.pos[p], Last: end - 1})
	}
	return recs, ranges
}

// done moves c past ranges and commits them.
func (x *explorer) done(c *xconsumer, ranges []apply.Range) {
	for _, r := range ranges {
		c.pos[r.Partition] = r.Last + 1
		x.committed[r.Partition] = r.Last + 1
	}
}

// idleBatch draws a consumer without a batch in flight and its next batch
// (the step is skipped when there is none).
func (x *explorer) idleBatch(t *rapid.T) (*xconsumer, []apply.Record, []apply.Range) {
	c := x.cons[rapid.IntRange(0, 1).Draw(t, "consumer")]
	if c.fly != nil {
		t.Skip("batch in flight")
	}
	recs, ranges := x.next(c, rapid.IntRange(1, maxBatch).Draw(t, "n"))
	if len(ranges) == 0 {
		t.Skip("nothing to consume")
	}
	return c, recs, ranges
}

// Consume lets a consumer apply its next batch whole.
func (x *explorer) Consume(t *rapid.T) {
	c, recs, ranges := x.idleBatch(t)
	x.note("consumer %d applies %v", x.index(c), ranges)
	x.apply(c, recs, ranges)
}

// apply applies a batch as the consumer does: whole, and after Redis went
// back in time the lost records first, then the batch with Repair. A
// batch refused for the status (a pause) stays where it is.
func (x *explorer) apply(c *xconsumer, recs []apply.Record, ranges []apply.Range) bool {
	_, err := c.a.Apply(x.ctx, recs, ranges)
	var ge *apply.GapError
	if errors.As(err, &ge) {
		x.repairGaps(c, ge, ranges)
		_, err = c.a.Repair(x.ctx, recs, ranges)
	}
	var nr *apply.NotReadyError
	if errors.As(err, &nr) {
		return false
	}
	if err != nil {
		x.t.Fatalf("apply %v: %v", ranges, err)
	}
	x.done(c, ranges)
	return true
}

// repairGaps applies again, with Repair, the records each gap lost before
// the batch's ranges.
func (x *explorer) repairGaps(c *xconsumer, ge *apply.GapError, ranges []apply.Range) {
	for _, g := range ge.Gaps {
		for _, r := range ranges {
			if r.Partition == g.Partition && g.Applied+1 < r.First {
				x.repair(c, g.Partition, g.Applied+1, r.First-1)
			}
		}
	}
}

// repair applies records first..last of partition p again with Repair.
func (x *explorer) repair(c *xconsumer, p int, first, last int64) {
	var recs []apply.Record
	for _, r := range x.log[p][first : last+1] {
		if !r.poison {
			recs = append(recs, apply.Record{Topic: xTopic, Partition: p, Offset: r.off, Event: r.ev})
		}
	}
	if _, err := c.a.Repair(x.ctx, recs, []apply.Range{{Topic: xTopic, Partition: p, First: first, Last: last}}); err != nil {
		var nr *apply.NotReadyError
		if !errors.As(err, &nr) {
			x.t.Fatalf("repair %d:%d-%d: %v", p, first, last, err)
		}
	}
}

// Begin lets a consumer plan its next batch and apply its user phase
// (Prepare, CommitUsers); the global phase follows in Finish (other steps
// may come between).
func (x *explorer) Begin(t *rapid.T) {
	c, recs, ranges := x.idleBatch(t)
	p, err := c.a.Prepare(x.ctx, recs, ranges)
	var nr *apply.NotReadyError
	if errors.As(err, &nr) {
		t.Skip("not ready")
	}
	if err != nil {
		t.Fatal(err)
	}
	x.note("consumer %d begins %v (user phase)", x.index(c), ranges)
	if err := c.a.CommitUsers(x.ctx, p); err != nil {
		p.Release()
		var ge *apply.GapError
		if !errors.As(err, &ge) {
			t.Fatal(err)
		}
		x.note("consumer %d finds a gap: applies %v whole", x.index(c), ranges)
		x.apply(c, recs, ranges) // the consumer repairs first, then applies whole
		return
	}
	c.fly = &inflight{p: p, recs: recs, ranges: ranges, born: x.step}
}

// Finish completes a consumer's batch in flight (its global phase, or the
// whole batch again when the holds changed or Redis went back in time).
func (x *explorer) Finish(t *rapid.T) {
	c := x.cons[rapid.IntRange(0, 1).Draw(t, "consumer")]
	if c.fly == nil {
		t.Skip("no batch in flight")
	}
	x.finish(c)
}

func (x *explorer) finish(c *xconsumer) {
	f := c.fly
	x.note("consumer %d finishes %v (redo %v)", x.index(c), f.ranges, f.redo)
	if !f.redo {
		_, err := c.a.CommitGlobal(x.ctx, f.p) // applies the batch again whole when the holds changed
		f.redo = true
		var ge *apply.GapError
		var nr *apply.NotReadyError
		switch {
		case err == nil:
			c.fly = nil
			x.done(c, f.ranges)
			return
		case errors.As(err, &ge), errors.As(err, &nr):
		default:
			x.t.Fatal(err)
		}
	}
	if x.apply(c, f.recs, f.ranges) {
		c.fly = nil
		return
	}
	// Refused for the status (a pause): the consumer waits for ready
	// between batches (it acknowledges tokens meanwhile) and then applies
	// the batch again whole.
	f.born = math.MaxInt
}

// Crash kills a consumer with its batch in flight: its user phase stays,
// its global phase never runs; it comes back from the committed offsets.
func (x *explorer) Crash(t *rapid.T) {
	c := x.cons[rapid.IntRange(0, 1).Draw(t, "consumer")]
	if c.fly == nil {
		t.Skip("no batch in flight")
	}
	x.note("consumer %d crashes with %v in flight", x.index(c), c.fly.ranges)
	c.fly.p.Release()
	c.fly = nil
	c.pos = x.committed
}

// Rebalance assigns each partition to one consumer or, while the old owner
// still works, to both; a consumer starts a partition it gains from the
// committed offset.
func (x *explorer) Rebalance(t *rapid.T) {
	for p := range xParts {
		owner := rapid.IntRange(0, 2).Draw(t, "owner") // 2: both
		for i, c := range x.cons {
			hold := owner == i || owner == 2
			if hold && !c.held[p] {
				c.pos[p] = x.committed[p]
			}
			c.held[p] = hold
		}
	}
	x.note("rebalance: consumer 0 holds %v, consumer 1 %v", x.cons[0].held, x.cons[1].held)
}

// Snapshot keeps Redis's state (a later Rollback goes back to it).
func (x *explorer) Snapshot(t *rapid.T) {
	if x.rb != nil || x.flying() {
		t.Skip("a rebuild or a batch in flight")
	}
	for p := range xParts {
		if x.wm(p) < 0 {
			t.Skip("a partition without watermark (a rollback before its first batch is not covered)")
		}
	}
	x.note("snapshot")
	x.snap = x.snap[:0]
	for _, k := range x.keys("*") {
		d, err := x.rdb.Dump(x.ctx, k).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		ttl := x.rdb.PTTL(x.ctx, k).Val()
		x.snap = append(x.snap, snapKey{key: k, dump: d, pttl: ttl})
	}
}

// Rollback puts Redis back to the snapshot: Redis going back in time.
func (x *explorer) Rollback(t *rapid.T) {
	if x.snap == nil || x.rb != nil {
		t.Skip("no snapshot, or a rebuild runs")
	}
	x.note("rollback to the snapshot")
	flushAll(t, x.ctx, x.rdb)
	for _, s := range x.snap {
		ttl := max(s.pttl, 0)
		if err := x.rdb.RestoreReplace(x.ctx, s.key, ttl, s.dump).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range x.cons {
		if c.fly != nil {
			c.fly.p.Release()
			c.fly.redo = true // its connection broke: the batch is applied again
		}
	}
}

// Check lets a consumer compare the committed offsets with the watermarks
// between batches and apply again what Redis lost (as it does every 30 s).
func (x *explorer) CheckLost(t *rapid.T) {
	x.checkLost(x.cons[rapid.IntRange(0, 1).Draw(t, "consumer")])
}

func (x *explorer) checkLost(c *xconsumer) {
	for p := range xParts {
		if w := x.wm(p); w >= 0 && w < x.committed[p]-1 {
			x.note("consumer %d repairs %d:%d-%d", x.index(c), p, w+1, x.committed[p]-1)
			x.repair(c, p, w+1, x.committed[p]-1)
		}
	}
}

// index is c's number.
func (x *explorer) index(c *xconsumer) int { return slices.Index(x.cons[:], c) }

// flying reports whether a consumer has a batch in flight.
func (x *explorer) flying() bool { return x.cons[0].fly != nil || x.cons[1].fly != nil }

// flyingSince reports whether a batch in flight was planned at or before step.
func (x *explorer) flyingSince(step int) bool {
	for _, c := range x.cons {
		if c.fly != nil && c.fly.born <= step {
			return true
		}
	}
	return false
}

// wm returns partition p's consumer watermark (-1: none).
func (x *explorer) wm(p int) int64 {
	v, err := x.rdb.HGet(x.ctx, "px:wm:{g}", xTopic+":"+strconv.Itoa(p)).Int64()
	if err != nil {
		return -1
	}
	return v
}

// keys returns the keys matching pattern (on every master).
func (x *explorer) keys(pattern string) []string {
	var out []string
	one := func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, pattern).Result()
		out = append(out, ks...)
		return err
	}
	var err error
	if cc, ok := x.rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex // ForEachMaster calls concurrently
		err = cc.ForEachMaster(x.ctx, func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return one(ctx, c)
		})
	} else {
		err = one(x.ctx, x.rdb.(*redis.Client))
	}
	if err != nil {
		x.t.Fatal(err)
	}
	return out
}

// del deletes the keys matching the patterns.
func (x *explorer) del(patterns ...string) {
	for _, pat := range patterns {
		for _, k := range x.keys(pat) {
			if err := x.rdb.Del(x.ctx, k).Err(); err != nil {
				x.t.Fatal(err)
			}
		}
	}
}

// RebuildStart begins a rebuild of per-user projections (chase) or of
// global ones (hold) through the protocol's transitions (coord): the
// replayer's lease, then the holds (and a sync token for a chase).
func (x *explorer) RebuildStart(t *rapid.T) {
	if x.rb != nil {
		t.Skip("a rebuild runs")
	}
	names := rapid.SampledFrom([][]string{{"last_viewed", "stats"}, {"history", "orders"}, {"stats"}, {"bestsellers", "recent_orders"}, {"product_views", "trending"}}).Draw(t, "projections")
	names = projections.WithReaders(x.cfg, names) // as the replayer does
	rb := &xrebuild{names: names, id: "T" + strconv.Itoa(x.step), since: x.step}
	s, _ := projections.Lookup(names[0])
	rb.global = s.Rebuild() == projections.RebuildHold
	var err error
	if rb.lease, err = x.coord.AcquireLease(x.ctx, "explorer", time.Minute); err != nil {
		t.Fatal(err)
	}
	if rb.global {
		err = x.coord.HoldAllOf(x.ctx, names)
	} else {
		var st coord.Start
		if st, err = x.coord.StartRebuild(x.ctx, names, rb.id, "S"+rb.id); err == nil && !st.Started {
			err = fmt.Errorf("start refused: %+v", st)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	x.note("rebuild of %v starts: holds", names)
	x.rb = rb
}

// patterns are the key patterns of the rebuild's projections.
func (rb *xrebuild) patterns() []string {
	var out []string
	for _, n := range rb.names {
		s, _ := projections.Lookup(n)
		out = append(out, s.KeyPatterns("")...)
	}
	return out
}

// RebuildWipe wipes the projections: a chase once every consumer
// acknowledged the sync token (no batch planned before it in flight); a
// hold at once, then the cut at the consumer watermarks.
func (x *explorer) RebuildWipe(t *rapid.T) {
	rb := x.rb
	if rb == nil || rb.wiped || (!rb.global && x.flyingSince(rb.since)) {
		t.Skip("no rebuild to wipe, or a consumer has not acknowledged")
	}
	x.note("rebuild wipes")
	x.del(append(rb.patterns(), "px:rwm:*")...)
	rb.wiped = true
	var err error
	if rb.global {
		rb.cut, err = x.coord.CutHolds(x.ctx, rb.names, []string{xTopic + ":0", xTopic + ":1"})
	} else {
		err = x.coord.MarkWiped(x.ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// RebuildRound replays, in batches whose mix of partitions rapid draws,
// the records after the replay's watermarks up to the consumer watermarks
// (chase) or the cut (hold).
func (x *explorer) RebuildRound(t *rapid.T) {
	rb := x.rb
	if rb == nil || !rb.wiped || rb.paused {
		t.Skip("no rebuild chasing")
	}
	x.replayUpTo(t, x.upTo(), rebuild.All)
}

// upTo is the last offset of each partition the replay reaches now.
func (x *explorer) upTo() [xParts]int64 {
	var to [xParts]int64
	for p := range xParts {
		if x.rb.global {
			to[p] = x.rb.cut[xTopic+":"+strconv.Itoa(p)]
		} else {
			to[p] = x.wm(p)
		}
	}
	return to
}

// replayUpTo replays the records after px:rwm:{g} up to to (inclusive) with
// the rebuild's applier in mode; rapid draws how the batches mix the
// partitions.
func (x *explorer) replayUpTo(t *rapid.T, to [xParts]int64, mode rebuild.Mode) {
	rb := x.rb
	sel := rebuild.Selection{Only: map[string]bool{}, WatermarkKey: "px:rwm:{g}", Tag: rb.id}
	for _, n := range rb.names {
		sel.Only[n] = true
	}
	opts := x.options()
	var a interface {
		Apply(context.Context, []apply.Record, []apply.Range) (apply.Result, error)
	}
	if rb.global {
		a = rebuild.NewCheckOnly(x.rdb, x.planner, opts, sel)
	} else {
		r := rebuild.NewRebuilder(x.rdb, x.planner, opts, sel, mode)
		if err := r.LoadScript(x.ctx); err != nil {
			t.Fatal(err)
		}
		a = r
	}
	var from [xParts]int64
	for p := range xParts {
		from[p] = 0
		if v, err := x.rdb.HGet(x.ctx, "px:rwm:{g}", xTopic+":"+strconv.Itoa(p)).Int64(); err == nil {
			from[p] = v + 1
		}
		if mode == rebuild.Marked {
			from[p] = to[p] + 1
			to[p] = min(to[p]+maxBatch, int64(len(x.log[p]))-1)
		}
	}
	for {
		var recs []apply.Record
		var ranges []apply.Range
		for p := range xParts {
			if from[p] > to[p] {
				continue
			}
			n := int64(rapid.IntRange(0, 2*maxBatch).Draw(t, "replay batch"))
			end := min(from[p]+n, to[p]+1)
			if end == from[p] {
				continue
			}
			for _, r := range x.log[p][from[p]:end] {
				if !r.poison {
					recs = append(recs, apply.Record{Topic: xTopic, Partition: p, Offset: r.off, Event: r.ev})
				}
			}
			ranges = append(ranges, apply.Range{Topic: xTopic, Partition: p, First: from[p], Last: end - 1})
			from[p] = end
		}
		if len(ranges) == 0 {
			if from[0] > to[0] && from[1] > to[1] {
				return
			}
			continue
		}
		if rapid.Bool().Draw(t, "partition 1 first") {
			slices.SortStableFunc(recs, func(a, b apply.Record) int { return b.Partition - a.Partition })
		}
		x.note("replay (mode %d) applies %v", mode, ranges)
		if _, err := a.Apply(x.ctx, recs, ranges); err != nil {
			t.Fatalf("replay %v: %v", ranges, err)
		}
	}
}

// RebuildPause pauses the consumers for the handover of a chase.
func (x *explorer) RebuildPause(t *rapid.T) {
	rb := x.rb
	if rb == nil || rb.global || !rb.wiped || rb.paused {
		t.Skip("no chase to pause")
	}
	x.note("rebuild pauses the consumers")
	rb.token = "P" + strconv.Itoa(x.step)
	if ok, status, err := x.coord.Pause(x.ctx, rb.token, rb.names); err != nil || !ok {
		t.Fatalf("pause: %v (status %q)", err, status)
	}
	rb.paused, rb.since = true, x.step
}

// RebuildEnd ends a rebuild: the handover of a chase (once every consumer
// acknowledged the pause: the records up to the consumer watermarks, the
// marked ones after them, then the holds lifted and status ready) or the
// release of a hold (once the replay reached the cut).
func (x *explorer) RebuildEnd(t *rapid.T) {
	rb := x.rb
	switch {
	case rb == nil || !rb.wiped:
		t.Skip("no rebuild to end")
	case !rb.global && (!rb.paused || x.flyingSince(rb.since)):
		t.Skip("not paused, or a consumer has not acknowledged")
	}
	x.note("rebuild ends (handover or release)")
	if rb.global {
		x.replayUpTo(t, x.upTo(), rebuild.All)
		if ok, err := x.coord.ReleaseHolds(x.ctx, rb.names, rb.cut); err != nil || !ok {
			t.Fatalf("release the holds: %v (released %v)", err, ok)
		}
	} else {
		wms, err := x.rdb.HGetAll(x.ctx, "px:wm:{g}").Result()
		if err != nil {
			t.Fatal(err)
		}
		to := x.upTo()
		x.replayUpTo(t, to, rebuild.All)
		x.replayUpTo(t, to, rebuild.Marked)
		if got, err := x.coord.HandBack(x.ctx, rb.token, rb.lease, wms, rb.names); err != nil || got != coord.HandedBack {
			t.Fatalf("hand back: %v (%v)", err, got)
		}
	}
	rb.lease.Release(x.ctx)
	x.del("px:rwm:*")
	x.rb = nil
}

// drain ends what the schedule left running (batches in flight, a
// rebuild), applies what Redis lost, and lets one consumer catch up.
func (x *explorer) drain() {
	x.finishAll()
	if rb := x.rb; rb != nil {
		if !rb.wiped {
			x.RebuildWipe(x.t)
		}
		if !rb.global && !rb.paused {
			x.RebuildPause(x.t)
		}
		x.RebuildEnd(x.t)
	}
	x.finishAll()
	for _, c := range x.cons {
		if c.fly != nil {
			x.t.Fatalf("a batch still refused after the rebuild ended: %v", c.fly.ranges)
		}
	}
	c := x.cons[0]
	c.held = [xParts]bool{true, true}
	c.pos = x.committed
	x.checkLost(c)
	for {
		recs, ranges := x.next(c, maxBatch)
		if len(ranges) == 0 {
			return
		}
		if !x.apply(c, recs, ranges) {
			x.t.Fatalf("batch %v refused after the schedule", ranges)
		}
	}
}

// finishAll completes every batch in flight that can be (not those the
// status refuses).
func (x *explorer) finishAll() {
	for _, c := range x.cons {
		if c.fly != nil {
			x.finish(c)
		}
	}
}

// compare checks every projection key against the model of the log.
func (x *explorer) compare() {
	opts := refmodel.Options{Projections: x.cfg, Location: time.UTC, Window: 24 * time.Hour, Now: x.now,
		Settle: time.Now().Add(5 * time.Second)}
	if diffs := refmodel.Compare(x.ctx, x.rdb, refmodel.Expected(opts, x.produced), opts, time.Second); len(diffs) > 0 {
		x.t.Fatalf("%d differences from the model:\n%s\nsteps:\n%s", len(diffs), strings.Join(diffs[:min(len(diffs), 20)], "\n"), strings.Join(x.trace, "\n"))
	}
}
