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
	"projector/internal/apply/rebuild"
	"projector/internal/config"
	"projector/internal/coord"
	"projector/internal/fingerprint"
	"projector/pkg/projections"
)

// ackTimeout bounds the wait for the consumers' acknowledgements of a token
// (a killed consumer's published settings stay fresh for fingerprint.TTL).
const ackTimeout = 2 * fingerprint.TTL

// newToken returns a fresh random token.
func newToken() string {
	tok := make([]byte, 8)
	_, _ = rand.Read(tok)
	return hex.EncodeToString(tok)
}

// handover hands the rebuilt projections back to the consumers with them
// paused between batches, and returns how long they were paused:
//  0. (consumers running) a sync token that every live consumer acknowledges
//     (and the chase again when that took long);
//  1. status paused with a fresh token; once every live consumer
//     acknowledged it, no batch of theirs is in flight;
//  2. W = the consumers' watermarks: the records up to W that the chase has
//     not replayed yet are replayed (RebuildAll);
//  3. the records after W up to batch.max_events per partition get their
//     user writes where their marker names them (RebuildMarked: a consumer
//     applied the user phase of their batch and crashed before its global
//     phase; the batch comes again and writes nothing more for its users);
//  4. one script deletes the holds and the rebuild's fields and sets status
//     ready, if the pause and the lease are still this replayer's and no
//     watermark moved since 2 (else 2-4 run again).
//
// From then on the consumers write the projections for every record after W.
func (r *rebuildRun) handover(ctx context.Context) (time.Duration, error) {
	// Wait (with the consumers running) until the entries of consumers that
	// died are ignored, so that the pause waits only for live ones.
	sync, since := newToken(), time.Now()
	if err := r.meta.SetSync(ctx, sync); err != nil {
		return 0, err
	}
	if err := waitAcks(ctx, r.rdb, r.cfg.Redis.KeyPrefix, sync); err != nil {
		return 0, err
	}
	if time.Since(since) > time.Second { // (a dead consumer's entry) catch up again first
		if err := r.chase(ctx); err != nil {
			return 0, err
		}
	}
	token := newToken()
	ok, status, err := r.meta.Pause(ctx, token, r.names)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("refusing: %s says status %q; only projections that are ready can be rebuilt while consumers run", r.meta.Key(), status)
	}
	paused := time.Now()
	released := false
	defer func() {
		if !released { // the consumers go on (the holds stay); a rerun resumes
			_ = r.meta.Resume(context.WithoutCancel(ctx), token)
		}
	}()
	r.log.Info("handover: consumers paused, waiting for every consumer to finish its batch in flight", zap.String("token", token))
	if err := waitAcks(ctx, r.rdb, r.cfg.Redis.KeyPrefix, token); err != nil {
		return 0, err
	}
	r.log.Info("handover: every consumer acknowledged the pause", zap.Duration("after", time.Since(paused)))
	for {
		wms, err := r.rdb.HGetAll(ctx, r.keys.Watermarks()).Result()
		if err != nil {
			return 0, fmt.Errorf("read consumer watermarks: %w", err)
		}
		last, err := r.pending(ctx, wms)
		if err != nil {
			return 0, err
		}
		if err := r.replay(ctx, last, rebuild.All); err != nil {
			return 0, err
		}
		marked, err := r.afterWatermarks(ctx, wms)
		if err != nil {
			return 0, err
		}
		if err := r.replay(ctx, marked, rebuild.Marked); err != nil {
			return 0, err
		}
		r.log.Info("handover: replayed up to the consumers' watermarks and the marked records after them",
			zap.Int64("records", last.total()), zap.Int64("after_watermarks_read", marked.total()), zap.Duration("after", time.Since(paused)))
		got, err := r.meta.HandBack(ctx, token, r.lease, wms, r.names)
		switch {
		case err != nil:
			return 0, err
		case got == coord.HandedBack:
			released = true
			return time.Since(paused), nil
		case got == coord.PauseLost:
			return 0, fmt.Errorf("%s no longer holds this replayer's pause; the consumers follow its status now (check it)", r.meta.Key())
		case got == coord.LeaseLost:
			return 0, fmt.Errorf("lost the lease %s (the replayer stalled for more than %v); run the same command again", r.keys.Lease(), rebuildLeaseTTL)
		}
		r.log.Info("handover: a consumer completed a batch during the pause; replaying up to its watermark")
	}
}

// afterWatermarks returns, per partition, the records after its consumer
// watermark in wms, up to batch.max_events of them (the most a consumer's
// batch holds).
func (r *rebuildRun) afterWatermarks(ctx context.Context, wms map[string]string) (ranges, error) {
	plan, err := planRanges(ctx, r.cfg, true)
	if err != nil {
		return nil, err
	}
	for i, s := range plan {
		if w, ok := offsetOf(wms, s); ok {
			s.First = max(s.First, w+1)
		}
		s.End = max(s.First, min(s.End, s.First+int64(r.cfg.Batch.MaxEvents)))
		plan[i] = s
	}
	return plan, nil
}

// offsetOf parses the offset that hash fields m hold for span s's partition.
func offsetOf(m map[string]string, s span) (int64, bool) {
	v, ok := m[s.Topic+":"+strconv.Itoa(s.Partition)]
	if !ok {
		return 0, false
	}
	o, err := strconv.ParseInt(v, 10, 64)
	return o, err == nil
}

// waitAcks waits until every running consumer acknowledged the token.
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
			return fmt.Errorf("consumers %s did not acknowledge token %s within %s", strings.Join(missing, ", "), token, ackTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond): // the pause lasts at least this long
		}
	}
}

// selection is what a replay of the named projections applies with: a
// planner with the consumers' full configuration, keeping only the named
// projections' writes, under the replay's watermarks rwm.
func selection(cfg config.Config, names []string, rwm string) (*projections.Planner, rebuild.Selection, error) {
	planner, err := projections.NewPlanner(cfg.Projections, cfg.Location, cfg.Redis.KeyPrefix)
	if err != nil {
		return nil, rebuild.Selection{}, err
	}
	sel := rebuild.Selection{Only: map[string]bool{}, WatermarkKey: rwm}
	for _, n := range names {
		sel.Only[n] = true
	}
	return planner, sel, nil
}

// applyOptions are the appliers' options under cfg.
func applyOptions(cfg config.Config) apply.Options {
	return apply.Options{Window: cfg.Idempotency.Window, Location: cfg.Location, KeyPrefix: cfg.Redis.KeyPrefix, Now: time.Now}
}
