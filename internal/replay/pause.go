package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/config"
	"projector/internal/fingerprint"
	"projector/pkg/projections"
)

// ackTimeout bounds the wait for the consumers' acknowledgements of a pause
// (a killed consumer's published settings stay fresh for fingerprint.TTL).
const ackTimeout = 2 * fingerprint.TTL

// pauseScript pauses the consumers: status paused, pause token ARGV[1],
// projections ARGV[2]. It refuses (returns the status) unless the status is
// ready, or paused by an earlier rebuild that did not finish.
var pauseScript = redis.NewScript(`
local s = redis.call('HGET', KEYS[1], 'status')
if s ~= 'ready' and s ~= 'paused' then return s or '' end
redis.call('HSET', KEYS[1], 'status', 'paused', 'pause', ARGV[1], 'pause_projections', ARGV[2])
return 'ok'`)

// resumeScript ends the pause with token ARGV[1]; returns 1 when it did.
var resumeScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'pause') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', 'ready')
redis.call('HDEL', KEYS[1], 'pause', 'pause_projections')
return 1`)

// pauseRebuild rebuilds projections that have per-user keys while the
// consumers keep running, paused between batches:
//  1. status paused with a fresh token: each consumer finishes its batch in
//     flight (its global script still completes it), starts no other and
//     acknowledges the token in px:cfg:{g};
//  2. once every live consumer acknowledged: W = the consumers' watermarks,
//     E = the end of every partition; the projections' keys are wiped;
//  3. records up to W (their batches are complete) are replayed: each one
//     whose marker names it, or that has no marker (expired; deduplicated in
//     memory), gets the projections' user writes, and the global writes
//     follow under the replay's own watermarks;
//  4. records after W up to E get their user writes again only when their
//     marker names them (a consumer applied the user phase of their batch
//     before it crashed; the wipe removed those writes; the global phase is
//     the consumers' when the batch is redelivered);
//  5. status ready: the consumers resume from their committed offsets.
func pauseRebuild(ctx context.Context, cfg config.Config, opts Options, rdb redis.UniversalClient, names []string, sum *Summary, log *zap.Logger) error {
	keys := projections.Keys{Prefix: cfg.Redis.KeyPrefix}
	tok := make([]byte, 8)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	got, err := pauseScript.Run(ctx, rdb, []string{keys.Meta()}, token, strings.Join(names, ",")).Text()
	if err != nil {
		return fmt.Errorf("pause the consumers: %w", err)
	}
	if got != "ok" {
		return fmt.Errorf("refusing: %s says status %q; only projections that are ready can be rebuilt while consumers run", keys.Meta(), got)
	}
	resumed, touched := false, false
	defer func() {
		if resumed { // let the consumers go on; rerun to complete the projections
			return
		}
		_ = resumeScript.Run(context.WithoutCancel(ctx), rdb, []string{keys.Meta()}, token).Err()
		if touched {
			log.Error("rebuild did not finish: the consumers resumed and the projections are incomplete; run the replayer again", zap.Strings("projections", names))
		} else {
			log.Error("rebuild did not start: the consumers resumed and nothing was changed", zap.Strings("projections", names))
		}
	}()
	log.Info("consumers paused: waiting for every consumer to finish its batch in flight", zap.String("token", token))
	if err := waitAcks(ctx, rdb, cfg.Redis.KeyPrefix, token); err != nil {
		return err
	}
	wms, err := rdb.HGetAll(ctx, keys.Watermarks()).Result()
	if err != nil {
		return fmt.Errorf("read consumer watermarks: %w", err)
	}
	plan, err := planRanges(ctx, cfg, true)
	if err != nil {
		return err
	}
	complete, marked := splitAt(plan, wms)
	log.Info("replay plan", zap.Strings("projections", names), zap.String("complete", complete.String()), zap.String("after_watermarks", marked.String()))
	touched = true
	if sum.Wiped, err = wipe(ctx, rdb, patterns(cfg.Redis.KeyPrefix, names)); err != nil {
		return fmt.Errorf("wipe %v: %w", names, err)
	}
	rwm := keys.Global("px:rwm")
	if err := rdb.Del(ctx, rwm).Err(); err != nil {
		return fmt.Errorf("reset %s: %w", rwm, err)
	}
	prog := newProgress(opts.Progress, opts.Terminal, complete.total()+marked.total())
	planner, sel, err := selection(cfg, names, rwm)
	if err != nil {
		return err
	}
	for _, step := range []struct {
		plan ranges
		mode apply.RebuildMode
	}{{complete, apply.RebuildAll}, {marked, apply.RebuildMarked}} {
		a := apply.NewRebuilder(rdb, planner, applyOptions(cfg), sel, step.mode)
		if err := a.LoadScript(ctx); err != nil {
			return err
		}
		if err := readAndApply(ctx, cfg, step.plan, batchOr(opts.BatchSize, RebuildBatch), a, sum, prog); err != nil {
			return err
		}
	}
	prog.done()
	ok, err := resumeScript.Run(ctx, rdb, []string{keys.Meta()}, token).Int()
	if err != nil {
		return fmt.Errorf("resume the consumers: %w", err)
	}
	resumed = true
	if ok != 1 { // the meta hash changed under us: Redis lost data, or another replayer took over
		return fmt.Errorf("%s no longer holds this replayer's pause; the consumers follow its status now (check it)", keys.Meta())
	}
	log.Info("consumers resumed", zap.Strings("projections", names))
	if err := rdb.Del(ctx, rwm).Err(); err != nil {
		log.Warn("remove replay watermarks", zap.String("key", rwm), zap.Error(err))
	}
	return nil
}

// waitAcks waits until every running consumer acknowledged the pause token.
func waitAcks(ctx context.Context, rdb redis.UniversalClient, prefix, token string) error {
	deadline := time.Now().Add(ackTimeout)
	for {
		missing, err := fingerprint.Unacked(ctx, rdb, prefix, token)
		if err != nil {
			return err
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("consumers %s did not acknowledge the pause within %s; nothing was rebuilt", strings.Join(missing, ", "), ackTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// splitAt splits each span at its partition's watermark: records up to the
// watermark (complete batches) and those after it.
func splitAt(plan ranges, wms map[string]string) (ranges, ranges) {
	var complete, after ranges
	for _, s := range plan {
		cut := s.First
		if v, ok := wms[s.Topic+":"+strconv.Itoa(s.Partition)]; ok {
			if w, err := strconv.ParseInt(v, 10, 64); err == nil {
				cut = min(max(w+1, s.First), s.End)
			}
		}
		c, a := s, s
		c.End, a.First = cut, cut
		complete, after = append(complete, c), append(after, a)
	}
	return complete, after
}

// selection is what a replay of the named projections applies with: a
// planner with the consumers' full configuration, keeping only the named
// projections' writes, under the replay's watermarks rwm.
func selection(cfg config.Config, names []string, rwm string) (*projections.Planner, apply.Selection, error) {
	planner, err := projections.NewPlanner(cfg.Projections, cfg.Location, cfg.Redis.KeyPrefix)
	if err != nil {
		return nil, apply.Selection{}, err
	}
	sel := apply.Selection{Only: map[string]bool{}, WatermarkKey: rwm}
	for _, n := range names {
		sel.Only[n] = true
	}
	return planner, sel, nil
}

// applyOptions are the appliers' options under cfg.
func applyOptions(cfg config.Config) apply.Options {
	return apply.Options{Window: cfg.Idempotency.Window, Location: cfg.Location, KeyPrefix: cfg.Redis.KeyPrefix, Now: time.Now}
}
