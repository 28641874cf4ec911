package replay

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"projector/internal/apply/rebuild"
	"projector/internal/config"
	"projector/internal/coord"
	"projector/internal/records"
	"projector/pkg/projections"
)

// pauses reports whether rebuilding the named projections takes the chase
// (chaseRebuild, with a short pause at its handover): some of them is not
// rebuilt by a hold alone (projections.RebuildHold, only for projections
// whose keys all live in the {g} slot, which the consumers' global script
// can hold atomically; their writes commute).
func pauses(names []string) bool {
	for _, n := range names {
		if s, ok := projections.Lookup(n); !ok || s.Rebuild() != projections.RebuildHold {
			return true
		}
	}
	return false
}

// rebuildSelected rebuilds the named projections while the consumers keep running.
// Selections with per-user keys, and any rebuild a replayer left unfinished
// after its chase began, take chaseRebuild; global ones alone are held:
//  1. hold:P = * — from the next batch on, consumers leave P out entirely
//     (their global script refuses a batch planned under other holds);
//  2. P's keys are wiped;
//  3. hold:P = T, T the consumers' watermarks, read and set in one
//     transaction (cutAtWatermarks) — consumers leave P out for records <= T
//     (applied already) and write it for later ones;
//  4. the replay writes P for every record <= T (own watermarks; a record's
//     marker is final there and names the copy of a duplicate the consumers
//     applied);
//  5. the hold is deleted once every consumer watermark has reached T
//     (at once). Each record's P effects are thus applied exactly once, also
//     when the copies of a duplicate lie in two partitions on either side
//     of T.
func rebuildSelected(ctx context.Context, cfg config.Config, opts Options, rdb redis.UniversalClient, names []string, log *zap.Logger) (Summary, error) {
	start := time.Now()
	sum := Summary{ByType: map[string]int64{}}
	if !opts.Wipe {
		return sum, fmt.Errorf("refusing: rebuilding %s replaces its keys; pass --wipe --yes", strings.Join(names, ","))
	}
	keys := projections.Keys{Prefix: cfg.Redis.KeyPrefix}
	m := coord.New(rdb, cfg.Redis.KeyPrefix, time.Now)
	st, err := m.Read(ctx)
	if err != nil {
		return sum, err
	}
	meta := st.Fields
	joined := strings.Join(names, ",")
	if cur := meta[coord.FieldRebuild]; cur != "" && cur != joined {
		return sum, fmt.Errorf("refusing: a rebuild of %s is pending in %s; finish it first (run the replayer with --projections %s --wipe --yes)", cur, m.Key(), cur)
	}
	chase := pauses(names) || meta[coord.FieldRebuildID] != ""
	plan, err := planRanges(ctx, cfg, true)
	if err != nil {
		return sum, err
	}
	if gaps := plan.gaps(); len(gaps) > 0 && !opts.AllowPartial {
		return sum, fmt.Errorf("refusing: Kafka no longer holds the beginning of the log (%s); pass --allow-partial to rebuild from what is left", strings.Join(gaps, ", "))
	}
	if opts.DryRun {
		how := "hold them in the consumers, wipe %v, replay them from %s up to the end of the log, then hand them back\n"
		if chase {
			how = "hold them in the consumers, wipe %v, replay them from %s up to the consumers' watermarks while the consumers go on, then hand them back with the consumers paused for the last records\n"
		}
		if meta[coord.FieldRebuildWiped] != "" {
			how = "resume the interrupted rebuild (no wipe of %v) from its checkpoints in %s (log: %s), then hand them back\n"
			fmt.Fprintf(opts.Progress, how, patterns(cfg.Redis.KeyPrefix, names), keys.Global("px:rwm"), plan.String())
			return sum, nil
		}
		fmt.Fprintf(opts.Progress, "dry run: would "+how, patterns(cfg.Redis.KeyPrefix, names), plan.String())
		return sum, nil
	}
	if held, _ := m.Held(ctx); meta[coord.FieldRebuild] != "" && held {
		fmt.Fprintf(opts.Progress, "a rebuild of %s is pending: waiting up to %v for the lease %s of the replayer that ran it\n",
			meta[coord.FieldRebuild], rebuildLeaseTTL, keys.Lease())
	}
	l, err := m.WaitLease(ctx, records.ProcessName(), rebuildLeaseTTL)
	if err != nil {
		return sum, err
	}
	defer l.Release(context.WithoutCancel(ctx))
	rwm := keys.Global("px:rwm")
	planner, sel, err := selection(cfg, names, rwm)
	if err != nil {
		return sum, err
	}
	if chase {
		r := &rebuildRun{cfg: cfg, opts: opts, rdb: rdb, keys: keys, meta: m, names: names, lease: l, planner: planner, sel: sel,
			sum: &sum, prog: newProgress(opts.Progress, opts.Terminal, 0).publishTo(ctx, m), log: log,
			pace: newPacer(opts.MaxRate, time.Now)}
		err := chaseRebuild(ctx, r)
		if err != nil {
			log.Error("rebuild interrupted: the consumers go on without the projections; run the same command again to resume it",
				zap.Strings("projections", names), zap.Error(err))
		}
		sum.Duration = time.Since(start)
		return sum, err
	}
	err = holdRebuild(ctx, cfg, opts, rdb, m, names, planner, sel, &sum, log)
	sum.Duration = time.Since(start)
	return sum, err
}

// holdRebuild rebuilds global projections alone by holding them (see rebuild).
func holdRebuild(ctx context.Context, cfg config.Config, opts Options, rdb redis.UniversalClient, m *coord.Meta, names []string,
	planner *projections.Planner, sel rebuild.Selection, sum *Summary, log *zap.Logger) error {
	rwm := sel.WatermarkKey
	if err := m.HoldAllOf(ctx, names); err != nil {
		return err
	}
	released := false
	defer func() {
		if !released { // let consumers write the projections again; rerun to complete them
			_ = m.LiftHolds(context.WithoutCancel(ctx), names)
			log.Error("rebuild did not finish: the hold is lifted and the projections are incomplete; run the replayer again", zap.Strings("projections", names))
		}
	}()
	wiped, err := wipe(ctx, rdb, patterns(cfg.Redis.KeyPrefix, names))
	if err != nil {
		return fmt.Errorf("wipe %v: %w", names, err)
	}
	sum.Wiped = wiped
	if err := rdb.Del(ctx, rwm).Err(); err != nil {
		return fmt.Errorf("reset %s: %w", rwm, err)
	}
	plan, err := planRanges(ctx, cfg, true)
	if err != nil {
		return err
	}
	parts := make([]string, len(plan))
	for i, s := range plan {
		parts[i] = s.Topic + ":" + strconv.Itoa(s.Partition)
	}
	upTo, err := m.CutHolds(ctx, names, parts)
	if err != nil {
		return err
	}
	for i, s := range plan {
		s.End = min(s.End, upTo[parts[i]]+1)
		plan[i] = s
	}
	applier := rebuild.NewCheckOnly(rdb, planner, applyOptions(cfg), sel)
	if err := applier.LoadScript(ctx); err != nil {
		return err
	}
	prog := newProgress(opts.Progress, opts.Terminal, plan.total()).publishTo(ctx, m)
	expect := map[string]string{coord.FieldRebuild: strings.Join(names, ",")}
	for _, n := range names {
		expect[coord.HoldField(n)] = coord.HoldUpTo(upTo)
	}
	if err := readAndApply(ctx, cfg, plan, batchOr(opts.BatchSize, RebuildBatch), checked{applier, m, expect}, sum, prog, withPace(newPacer(opts.MaxRate, time.Now))); err != nil {
		return err
	}
	waitingSince := time.Now()
	for {
		ok, err := m.ReleaseHolds(ctx, names, upTo)
		if err != nil {
			return err
		}
		if ok {
			released = true
			log.Info("consumers passed the replayed offsets: they write the projections again", zap.Strings("projections", names))
			break
		}
		if time.Since(waitingSince) > 10*time.Second {
			log.Info("waiting for the consumers to pass the replayed offsets", zap.String("offsets", coord.HoldUpTo(upTo)))
			waitingSince = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	prog.done()
	if err := rdb.Del(ctx, rwm).Err(); err != nil {
		log.Warn("remove replay watermarks", zap.String("key", rwm), zap.Error(err))
	}
	return nil
}
