package apply

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// applyPeer is BenchmarkLevers' at-least-once reference: every planned
// write of every event (user and global, not coalesced) as plain commands,
// all of a batch in one pipeline: ZADD GT, ZINCRBY, INCRBY, SET, SADD, each
// followed by its PEXPIREAT, the sorted sets' trims after each add; no
// markers, no watermarks, no guards, no scripts. It sends what cmd/bench's
// peer sends (internal/testing/bench/peer.Commands, which this package cannot
// import: that package imports it through internal/app), but for SET and
// its expiry as two commands.
func applyPeer(ctx context.Context, a *Applier, rdb *redis.Client, recs []Record, _ []Range) error {
	pipe := rdb.Pipeline()
	now := a.opts.Now()
	var ws []projections.Write
	for i := range recs {
		ws = a.planner.Plan(recs[i].Event, now, ws[:0])
		for j := range ws {
			peerWrite(ctx, pipe, &ws[j])
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("peer pipeline: %w", err)
	}
	return nil
}

// peerWrite queues w's commands on pipe.
func peerWrite(ctx context.Context, pipe redis.Pipeliner, w *projections.Write) {
	switch w.Kind {
	case projections.IncrBy:
		pipe.IncrBy(ctx, w.Key, w.Delta)
	case projections.ZIncrBy:
		pipe.ZIncrBy(ctx, w.Key, float64(w.Delta), w.Member)
	case projections.ZAddMax:
		pipe.ZAddGT(ctx, w.Key, redis.Z{Score: float64(w.Score), Member: w.Member})
		if w.Trim.Keep > 0 {
			pipe.ZRemRangeByRank(ctx, w.Key, 0, int64(-(w.Trim.Keep + 1)))
		}
		if w.Trim.RetentionMs > 0 {
			pipe.ZRemRangeByScore(ctx, w.Key, "-inf", "("+strconv.FormatInt(w.Score-w.Trim.RetentionMs, 10))
		}
	case projections.SetValue:
		pipe.Set(ctx, w.Key, w.Value, 0)
	case projections.SetMax:
		pipe.Set(ctx, w.Key, w.Score, 0)
	case projections.ZRemUpTo:
		pipe.ZRemRangeByScore(ctx, w.Key, "-inf", strconv.FormatInt(w.Score, 10))
	case projections.ZRemMemberUpTo, projections.ZRemPrefixUpTo:
		pipe.ZRem(ctx, w.Key, w.Member)
	case projections.SAdd:
		pipe.SAdd(ctx, w.Key, w.Member)
	}
	if w.ExpireAt > 0 {
		pipe.PExpireAt(ctx, w.Key, time.UnixMilli(w.ExpireAt))
	}
}
