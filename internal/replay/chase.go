package replay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/apply/rebuild"
	"projector/internal/config"
	"projector/internal/coord"
	"projector/pkg/projections"
)

// rebuildLeaseTTL is the lease of a rebuild (LeaseTTL, as after data loss):
// a rerun after a crash waits at most this long for it, and consumers go on
// after a pause whose replayer died within it.
const rebuildLeaseTTL = coord.LeaseTTL

// maxChaseRounds bounds the chase when the consumers outrun the replay.
const maxChaseRounds = 20

// rebuildRun is one run of a rebuild next to running consumers.
type rebuildRun struct {
	cfg     config.Config
	opts    Options
	rdb     redis.UniversalClient
	keys    projections.Keys
	meta    *coord.Meta
	expect  map[string]string // the meta fields of the rebuild once wiped, checked before every batch
	names   []string
	lease   *coord.Lease
	planner *projections.Planner
	sel     rebuild.Selection
	sum     *Summary
	prog    *progress
	log     *zap.Logger
	pace    *pacer // --max-rate, for the chase (never the handover)
}

// chaseRebuild rebuilds the named projections while the consumers keep
// applying everything else (docs/contract.md section 6.2):
//  1. hold:P = * and a sync token in one HSET: the consumers leave P out
//     (user and global writes); once each acknowledged the token between two
//     batches, none of theirs planned without the hold is in flight, and
//     P's keys are wiped;
//  2. chase: the records up to the consumers' watermarks W (their batches
//     are complete, their markers final) are replayed after the replay's own
//     watermarks, round after round, until a round has little left;
//  3. handover (a short pause, see handover).
//
// Its checkpoints (px:rwm:{g}, px:rwm:{u:<user>}, the markers it sets) let
// a rerun of the same command resume after a crash.
func chaseRebuild(ctx context.Context, r *rebuildRun) error {
	joined := strings.Join(r.names, ",")
	id, sync := newToken(), newToken()
	st, err := r.meta.StartRebuild(ctx, r.names, id, sync)
	if err != nil {
		return err
	}
	wiped := false
	switch {
	case st.Started:
		r.log.Info("holding the projections in the consumers", zap.Strings("projections", r.names), zap.String("sync", sync))
	case st.Resume:
		id, wiped = st.ID, st.Wiped
		if wiped {
			fmt.Fprintf(r.opts.Progress, "resuming the interrupted rebuild of %s from its checkpoints\n", joined)
		} else if err := r.meta.SetSync(ctx, sync); err != nil {
			return err
		}
	case st.Busy != "":
		return fmt.Errorf("refusing: a rebuild of %s is pending in %s; finish it first (run the replayer with --projections %s --wipe --yes)",
			st.Busy, r.meta.Key(), st.Busy)
	default:
		return fmt.Errorf("refusing: %s says status %q; only projections that are ready can be rebuilt while consumers run", r.meta.Key(), st.Refused)
	}
	r.sel.Tag = id
	if !wiped {
		if err := r.wipeFirst(ctx, sync); err != nil {
			return err
		}
	}
	if err := r.chase(ctx); err != nil {
		return err
	}
	paused, err := r.handover(ctx)
	if err != nil {
		return err
	}
	r.prog.done()
	fmt.Fprintf(r.opts.Progress, "handover: consumers paused for %v\n", paused.Round(time.Millisecond))
	r.log.Info("rebuilt projections handed back to the consumers", zap.Strings("projections", r.names), zap.Duration("paused", paused))
	if _, err := wipe(ctx, r.rdb, []string{r.meta.CheckpointPattern()}); err != nil {
		r.log.Warn("remove the rebuild's watermarks", zap.Error(err))
	}
	return nil
}

// wipeFirst waits until every consumer acknowledged the sync token, then
// deletes the projections' keys and the checkpoints of any earlier rebuild,
// and records that it did.
func (r *rebuildRun) wipeFirst(ctx context.Context, sync string) error {
	if err := waitAcks(ctx, r.rdb, r.cfg.Redis.KeyPrefix, sync); err != nil {
		return err
	}
	n, err := wipe(ctx, r.rdb, append(patterns(r.cfg.Redis.KeyPrefix, r.names), r.meta.CheckpointPattern()))
	if err != nil {
		return fmt.Errorf("wipe %v: %w", r.names, err)
	}
	r.sum.Wiped = n
	return r.meta.MarkWiped(ctx)
}

// chase replays, round after round, the records up to the consumers'
// watermarks that the replay has not reached, until a round replays fewer
// than batch.max_events records or takes less than a second.
func (r *rebuildRun) chase(ctx context.Context) error {
	for round := 1; round <= maxChaseRounds; round++ {
		wms, err := r.rdb.HGetAll(ctx, r.keys.Watermarks()).Result()
		if err != nil {
			return fmt.Errorf("read consumer watermarks: %w", err)
		}
		plan, err := r.pending(ctx, wms)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := r.replay(ctx, plan, rebuild.All, withPace(r.pace)); err != nil {
			return err
		}
		r.log.Info("chase round", zap.Int("round", round), zap.Int64("records", plan.total()), zap.Duration("took", time.Since(start)))
		if plan.total() < int64(r.cfg.Batch.MaxEvents) || time.Since(start) < time.Second {
			return nil
		}
	}
	return nil
}

// pending returns, per partition, the records after the replay's
// watermarks (px:rwm:{g}) up to the consumer watermarks wms.
func (r *rebuildRun) pending(ctx context.Context, wms map[string]string) (ranges, error) {
	plan, err := planRanges(ctx, r.cfg, true)
	if err != nil {
		return nil, err
	}
	done, err := r.rdb.HGetAll(ctx, r.sel.WatermarkKey).Result()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.sel.WatermarkKey, err)
	}
	for i, s := range plan {
		if w, ok := offsetOf(done, s); ok {
			s.First = max(s.First, w+1)
		}
		end := s.First // no consumer watermark: the consumers applied nothing there
		if w, ok := offsetOf(wms, s); ok {
			end = w + 1
		}
		s.End = max(s.First, min(s.End, end))
		plan[i] = s
	}
	return plan, nil
}

// replay applies the records of plan with a Rebuilder in mode.
func (r *rebuildRun) replay(ctx context.Context, plan ranges, mode rebuild.Mode, opts ...readOption) error {
	if plan.total() == 0 {
		return nil
	}
	a := rebuild.NewRebuilder(r.rdb, r.planner, applyOptions(r.cfg), r.sel, mode)
	if err := a.LoadScript(ctx); err != nil {
		return err
	}
	if r.expect == nil {
		fields := []string{coord.FieldRebuild, coord.FieldRebuildID, coord.FieldRebuildWiped}
		for _, n := range r.names {
			fields = append(fields, coord.HoldField(n))
		}
		got, err := r.meta.Fields(ctx, fields...)
		if err != nil {
			return err
		}
		if got[coord.FieldRebuildID] != r.sel.Tag || got[coord.FieldRebuildWiped] == "" {
			return fmt.Errorf("%s no longer holds this rebuild (id %q, wiped %q): Redis went back in time or another replayer ended it; run the same command again",
				r.meta.Key(), got[coord.FieldRebuildID], got[coord.FieldRebuildWiped])
		}
		r.expect = got
	}
	r.prog.grow(plan.total())
	return readAndApply(ctx, r.cfg, plan, batchOr(r.opts.BatchSize, RebuildBatch), checked{a, r.meta, r.expect}, r.sum, r.prog, opts...)
}

// checked applies through the applier after checking, before every batch,
// that the meta hash still holds the rebuild as this replayer set it
// (coord.Meta.Expect).
type checked struct {
	batchApplier
	meta   *coord.Meta
	fields map[string]string
}

// Apply checks the meta hash, then applies the batch.
func (c checked) Apply(ctx context.Context, recs []apply.Record, ranges []apply.Range) (apply.Result, error) {
	if err := c.meta.Expect(ctx, c.fields); err != nil {
		return apply.Result{Outcomes: make([]apply.Outcome, len(recs))}, err
	}
	return c.batchApplier.Apply(ctx, recs, ranges)
}
