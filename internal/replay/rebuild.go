package replay

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/config"
	"projector/internal/records"
	"projector/pkg/projections"
)

// pauses reports whether rebuilding the named projections pauses the
// consumers: some of them is not rebuilt by a hold (projections.RebuildHold,
// only for projections whose keys all live in the {g} slot, which the
// consumers' global script can hold atomically).
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
// Projections with per-user keys are rebuilt with the consumers paused
// between batches (pauseRebuild); global ones are held instead, and the
// consumers go on with everything else:
//  1. hold:P = * — from the next batch on, consumers leave P out entirely
//     (their global script refuses a batch planned under other holds);
//  2. P's keys are wiped; T = the last offset of every partition now;
//  3. hold:P = T — consumers leave P out for records <= T and write it for
//     later ones;
//  4. the replay writes P for every record <= T (own watermarks, same dedupe);
//  5. when every consumer watermark has reached T, the hold is deleted
//     atomically. Each record's P effects are thus applied exactly once.
func rebuild(ctx context.Context, cfg config.Config, opts Options, rdb redis.UniversalClient, names []string, log *zap.Logger) (Summary, error) {
	start := time.Now()
	sum := Summary{ByType: map[string]int64{}}
	perUser := pauses(names)
	if !opts.Wipe {
		return sum, fmt.Errorf("refusing: rebuilding %s replaces its keys; pass --wipe --yes", strings.Join(names, ","))
	}
	keys := projections.Keys{Prefix: cfg.Redis.KeyPrefix}
	if st, _ := rdb.HGet(ctx, keys.Meta(), "status").Result(); st == apply.StatusPaused {
		perUser = true // an earlier pause did not end: finish with the consumers paused
	}
	plan, err := planRanges(ctx, cfg, true)
	if err != nil {
		return sum, err
	}
	if gaps := plan.gaps(); len(gaps) > 0 && !opts.AllowPartial {
		return sum, fmt.Errorf("refusing: Kafka no longer holds the beginning of the log (%s); pass --allow-partial to rebuild from what is left", strings.Join(gaps, ", "))
	}
	if opts.DryRun {
		how := "hold them in the consumers"
		if perUser {
			how = "pause the consumers between batches"
		}
		fmt.Fprintf(opts.Progress, "dry run: would %s, wipe %v, replay them from %s up to the consumers' watermarks, then hand them back\n",
			how, patterns(cfg.Redis.KeyPrefix, names), plan.String())
		return sum, nil
	}
	l, err := acquireLease(ctx, rdb, keys.Global("px:lease"), records.ProcessName(), 30*time.Second)
	if err != nil {
		return sum, err
	}
	defer l.release(context.WithoutCancel(ctx))
	if perUser {
		err := pauseRebuild(ctx, cfg, opts, rdb, names, &sum, log)
		sum.Duration = time.Since(start)
		return sum, err
	}
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
	if err := setHolds(apply.HoldAll); err != nil {
		return sum, fmt.Errorf("hold %v: %w", names, err)
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
		return sum, fmt.Errorf("wipe %v: %w", names, err)
	}
	sum.Wiped = wiped
	rwm := keys.Global("px:rwm")
	if err := rdb.Del(ctx, rwm).Err(); err != nil {
		return sum, fmt.Errorf("reset %s: %w", rwm, err)
	}
	plan, err = planRanges(ctx, cfg, true)
	if err != nil {
		return sum, err
	}
	upTo := map[string]int64{}
	for _, s := range plan {
		upTo[s.Topic+":"+strconv.Itoa(s.Partition)] = s.End - 1
	}
	if err := setHolds(apply.HoldUpTo(upTo)); err != nil {
		return sum, fmt.Errorf("hold %v up to %s: %w", names, plan.String(), err)
	}
	planner, sel, err := selection(cfg, names, rwm)
	if err != nil {
		return sum, err
	}
	applier := apply.NewCheckOnly(rdb, planner, applyOptions(cfg), sel)
	if err := applier.LoadScript(ctx); err != nil {
		return sum, err
	}
	prog := newProgress(opts.Progress, opts.Terminal, plan.total())
	if err := readAndApply(ctx, cfg, plan, batchOr(opts.BatchSize, RebuildBatch), applier, &sum, prog); err != nil {
		return sum, err
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
			return sum, fmt.Errorf("release hold: %w", err)
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
			return sum, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	prog.done()
	if err := rdb.Del(ctx, rwm).Err(); err != nil {
		log.Warn("remove replay watermarks", zap.String("key", rwm), zap.Error(err))
	}
	sum.Duration = time.Since(start)
	return sum, nil
}
