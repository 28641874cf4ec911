package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/config"
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

// releaseHold ends the hold once the consumers' watermarks (KEYS[1]) reached
// the replayed offsets: ARGV n, n x (field, last replayed offset), then the
// meta fields to delete from KEYS[2]. Returns 1 when released.
var releaseHold = redis.NewScript(`
local n = tonumber(ARGV[1])
for j = 0, n - 1 do
  local wm = redis.call('HGET', KEYS[1], ARGV[2 + 2 * j])
  if (tonumber(wm) or -1) < tonumber(ARGV[3 + 2 * j]) then return 0 end
end
for j = 2 + 2 * n, #ARGV do redis.call('HDEL', KEYS[2], ARGV[j]) end
return 1`)

// rebuild rebuilds the named projections while the consumers keep running.
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
func rebuild(ctx context.Context, cfg config.Config, opts Options, rdb redis.UniversalClient, names []string, log *zap.Logger) (Summary, error) {
	start := time.Now()
	sum := Summary{ByType: map[string]int64{}}
	if !opts.Wipe {
		return sum, fmt.Errorf("refusing: rebuilding %s replaces its keys; pass --wipe --yes", strings.Join(names, ","))
	}
	keys := projections.Keys{Prefix: cfg.Redis.KeyPrefix}
	meta, err := rdb.HGetAll(ctx, keys.Meta()).Result()
	if err != nil {
		return sum, fmt.Errorf("read %s: %w", keys.Meta(), err)
	}
	joined := strings.Join(names, ",")
	if cur := meta[apply.RebuildField]; cur != "" && cur != joined {
		return sum, fmt.Errorf("refusing: a rebuild of %s is pending in %s; finish it first (run the replayer with --projections %s --wipe --yes)", cur, keys.Meta(), cur)
	}
	chase := pauses(names) || meta[rebuildIDField] != ""
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
		if meta[rebuildWipedField] != "" {
			how = "resume the interrupted rebuild (no wipe of %v) from its checkpoints in %s (log: %s), then hand them back\n"
			fmt.Fprintf(opts.Progress, how, patterns(cfg.Redis.KeyPrefix, names), keys.Global("px:rwm"), plan.String())
			return sum, nil
		}
		fmt.Fprintf(opts.Progress, "dry run: would "+how, patterns(cfg.Redis.KeyPrefix, names), plan.String())
		return sum, nil
	}
	if meta[apply.RebuildField] != "" && rdb.Exists(ctx, keys.Lease()).Val() > 0 {
		fmt.Fprintf(opts.Progress, "a rebuild of %s is pending: waiting up to %v for the lease %s of the replayer that ran it\n",
			meta[apply.RebuildField], rebuildLeaseTTL, keys.Lease())
	}
	l, err := waitLease(ctx, rdb, keys.Lease(), rebuildLeaseTTL)
	if err != nil {
		return sum, err
	}
	defer l.release(context.WithoutCancel(ctx))
	rwm := keys.Global("px:rwm")
	planner, sel, err := selection(cfg, names, rwm)
	if err != nil {
		return sum, err
	}
	if chase {
		r := &rebuildRun{cfg: cfg, opts: opts, rdb: rdb, keys: keys, names: names, lease: l, planner: planner, sel: sel,
			sum: &sum, prog: newProgress(opts.Progress, opts.Terminal, 0).publishTo(ctx, rdb, keys.Meta()), log: log,
			pace: newPacer(opts.MaxRate, time.Now)}
		err := chaseRebuild(ctx, r)
		if err != nil {
			log.Error("rebuild interrupted: the consumers go on without the projections; run the same command again to resume it",
				zap.Strings("projections", names), zap.Error(err))
		}
		sum.Duration = time.Since(start)
		return sum, err
	}
	err = holdRebuild(ctx, cfg, opts, rdb, names, planner, sel, &sum, log)
	sum.Duration = time.Since(start)
	return sum, err
}

// cutAtWatermarks sets the hold fields to the consumers' watermarks
// (px:wm:{g}) of every partition of plan (-1 where a partition has none: no
// record of it is held), read and set in one transaction, and returns them.
// A record at or below its watermark has been applied by a consumer, its
// marker is final and names the copy of a duplicate that the consumers
// applied, so the replay decides it as they did; the consumers apply every
// later record with the projection.
func cutAtWatermarks(ctx context.Context, rdb redis.UniversalClient, keys projections.Keys, plan ranges, holdFields []string) (map[string]int64, error) {
	for {
		var upTo map[string]int64
		err := rdb.Watch(ctx, func(tx *redis.Tx) error {
			wms, err := tx.HGetAll(ctx, keys.Watermarks()).Result()
			if err != nil {
				return err
			}
			upTo = map[string]int64{}
			for _, s := range plan {
				w, ok := offsetOf(wms, s)
				if !ok {
					w = -1
				}
				upTo[s.Topic+":"+strconv.Itoa(s.Partition)] = w
			}
			hold := apply.HoldUpTo(upTo)
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, f := range holdFields {
					p.HSet(ctx, keys.Meta(), f, hold)
				}
				return nil
			})
			return err
		}, keys.Watermarks())
		if errors.Is(err, redis.TxFailedErr) {
			continue // a consumer completed a batch meanwhile
		}
		return upTo, err
	}
}

// holdRebuild rebuilds global projections alone by holding them (see rebuild).
func holdRebuild(ctx context.Context, cfg config.Config, opts Options, rdb redis.UniversalClient, names []string,
	planner *projections.Planner, sel apply.Selection, sum *Summary, log *zap.Logger) error {
	keys := projections.Keys{Prefix: cfg.Redis.KeyPrefix}
	rwm := sel.WatermarkKey
	var holdFields []string
	setHolds := func(value string) error {
		var vals []any
		for _, n := range names {
			vals = append(vals, apply.HoldField(n), value)
		}
		return rdb.HSet(ctx, keys.Meta(), vals...).Err()
	}
	for _, n := range names {
		holdFields = append(holdFields, apply.HoldField(n))
	}
	holdFields = append(append(holdFields, apply.RebuildField), progressFields...)
	if err := rdb.HSet(ctx, keys.Meta(), apply.RebuildField, strings.Join(names, ",")).Err(); err != nil {
		return fmt.Errorf("mark %v rebuilding: %w", names, err)
	}
	if err := setHolds(apply.HoldAll); err != nil {
		return fmt.Errorf("hold %v: %w", names, err)
	}
	released := false
	defer func() {
		if !released { // let consumers write the projections again; rerun to complete them
			_ = rdb.HDel(context.WithoutCancel(ctx), keys.Meta(), holdFields...).Err()
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
	upTo, err := cutAtWatermarks(ctx, rdb, keys, plan, holdFields[:len(names)])
	if err != nil {
		return fmt.Errorf("hold %v up to the consumers' watermarks: %w", names, err)
	}
	for i, s := range plan {
		s.End = min(s.End, upTo[s.Topic+":"+strconv.Itoa(s.Partition)]+1)
		plan[i] = s
	}
	applier := apply.NewCheckOnly(rdb, planner, applyOptions(cfg), sel)
	if err := applier.LoadScript(ctx); err != nil {
		return err
	}
	prog := newProgress(opts.Progress, opts.Terminal, plan.total()).publishTo(ctx, rdb, keys.Meta())
	if err := readAndApply(ctx, cfg, plan, batchOr(opts.BatchSize, RebuildBatch), applier, sum, prog, withPace(newPacer(opts.MaxRate, time.Now))); err != nil {
		return err
	}
	args := []any{len(upTo)}
	for f, o := range upTo {
		args = append(args, f, o)
	}
	for _, h := range holdFields {
		args = append(args, h)
	}
	waitingSince := time.Now()
	for {
		ok, err := releaseHold.Run(ctx, rdb, []string{keys.Watermarks(), keys.Meta()}, args...).Int()
		if err != nil {
			return fmt.Errorf("release hold: %w", err)
		}
		if ok == 1 {
			released = true
			log.Info("consumers passed the replayed offsets: they write the projections again", zap.Strings("projections", names))
			break
		}
		if time.Since(waitingSince) > 10*time.Second {
			log.Info("waiting for the consumers to pass the replayed offsets", zap.String("offsets", apply.HoldUpTo(upTo)))
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
