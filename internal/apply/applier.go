package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply/wire"
	"projector/internal/coord"
	"projector/pkg/projections"
)

// Guards are the checks of an Applier beyond markers and watermarks.
type Guards struct {
	// IgnoreMeta applies batches whatever px:meta:{g} says (the replayer
	// after a data loss, which owns the meta status while it rebuilds).
	IgnoreMeta bool
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
}

// Applier applies batches of records to Redis, guarded by the idempotency
// markers (set with the user writes) and the global watermarks px:wm:{g}.
type Applier struct {
	*Core
	guards Guards
	nodes  *masterWatermarks // each master's own watermarks (GapCheck, Evidence)
	sealer sealer
	meta   *coord.Meta
}

// New returns an Applier writing through rdb.
func New(rdb redis.UniversalClient, planner *projections.Planner, opts Options, g Guards) *Applier {
	keys := projections.Keys{Prefix: opts.KeyPrefix}
	nodes := &masterWatermarks{rdb: rdb, keys: keys, on: g.Evidence}
	return &Applier{Core: NewCore(rdb, planner, opts, nil), guards: g, meta: coord.New(rdb, opts.KeyPrefix, opts.Now), nodes: nodes,
		sealer: sealer{rdb: rdb, keys: keys, nodes: nodes, script: wire.SealScript(), sync: g.Sync, evidence: g.Evidence, gapCheck: g.GapCheck}}
}

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

// applyLoop runs attempts until none meets holds that changed meanwhile.
func (a *Applier) applyLoop(ctx context.Context, recs []Record, ranges []Range, repair bool) (Result, error) {
	for {
		res, err := a.apply(ctx, newBatch(recs, ranges), repair)
		if !errors.Is(err, errHoldsChanged) {
			return res, err
		}
	}
}

// apply is one attempt of Apply: the user phase, then the global phase,
// then the seal.
func (a *Applier) apply(ctx context.Context, b *Batch, repair bool) (Result, error) {
	if err := a.readState(ctx, b); err != nil {
		return b.res, err
	}
	if a.guards.GapCheck {
		if err := a.nodes.precheck(ctx, b.ranges, b.wms); err != nil {
			return b.res, err
		}
	}
	skip := b.wms
	if repair {
		skip = nil
	}
	defer a.plan(b, skip)()
	return a.phases(ctx, b)
}

// phases applies a planned batch: the user phase, the global phase, the seal.
func (a *Applier) phases(ctx context.Context, b *Batch) (Result, error) {
	if err := a.applyUsers(ctx, b); err != nil {
		return b.res, err
	}
	return b.res, a.globalAndSeal(ctx, b)
}

// globalAndSeal is the part of phases after the user phase.
func (a *Applier) globalAndSeal(ctx context.Context, b *Batch) error {
	if err := a.applyGlobal(ctx, b, a.globalGuard()); err != nil {
		return err
	}
	return a.sealer.seal(ctx, b.ranges)
}

// globalGuard guards the global call with px:wm:{g} and, unless IgnoreMeta,
// the meta hash; with GapCheck it refuses a batch after a gap.
func (a *Applier) globalGuard() globalGuard {
	g := globalGuard{wmKey: a.keys.Watermarks(), mode: wire.ModeGlobal, meta: !a.guards.IgnoreMeta}
	if a.guards.GapCheck {
		g.mode = wire.ModeGlobalGaps
	}
	return g
}

// readState reads the watermarks and the meta hash into b: a batch starts
// only while the status is ready, or paused by a replayer whose lease is
// gone (the global script checks the status again, atomically), and is
// planned with the holds in force.
func (a *Applier) readState(ctx context.Context, b *Batch) error {
	pipe := a.rdb.Pipeline()
	wmCmd := pipe.HGetAll(ctx, a.keys.Watermarks())
	var state func() (coord.State, bool, error)
	if !a.guards.IgnoreMeta {
		state = a.meta.Queue(ctx, pipe)
	}
	_, _ = pipe.Exec(ctx)
	var err error
	if b.wms, err = wmCmd.Result(); err != nil {
		return fmt.Errorf("read watermarks: %w", err)
	}
	if a.guards.IgnoreMeta {
		return nil
	}
	st, lease, err := state()
	if err != nil {
		return err
	}
	b.held, b.heldRaw = st.Holds, st.HoldsRaw
	if coord.Effective(st.Status, lease) != coord.StatusReady {
		return &NotReadyError{Status: st.Status}
	}
	return nil
}
