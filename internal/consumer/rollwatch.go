package consumer

import (
	"context"
	"maps"
	"time"

	"go.uber.org/zap"

	"projector/internal/coord"
	"projector/internal/offsets"
	"projector/internal/redischeck"
)

// How often watchRollback looks at the servers' identity, and how often it
// compares the committed offsets with the watermarks regardless.
const (
	identityEvery = 2 * time.Second
	offsetsEvery  = 30 * time.Second
)

// watchRollback finds partitions whose committed records Redis no longer
// holds although no batch of them comes (an idle partition, or one another
// consumer reads): at start, after a new connection to Redis, when a
// server's identity changes (a restart, a promoted replica) and every
// offsetsEvery, it compares the group's committed offsets with the
// watermarks in Redis, and hands the lost ranges to the consume loop.
//
// A server that refuses INFO (an ACL user without +info) turns the identity
// check off, with one warning; the other occasions still hold.
func (c *Consumer) watchRollback(ctx context.Context, jobs chan<- []lost) {
	var (
		ids     map[string]string
		looked  bool // findLost succeeded once
		warned  bool // the refusal of INFO was logged
		dials   uint64
		lastRun time.Time
		t       = time.NewTicker(identityEvery)
	)
	defer t.Stop()
	for {
		now, reason := c.opts.Now(), ""
		cur, err := c.meta.Identity(ctx)
		if err != nil && redischeck.Refused(err) {
			if !warned {
				c.log.Warn("redis refused INFO: the server-identity check (run_id, master_replid) is off: a restart or failover "+
					"that takes Redis back in time is found at the next batch of each partition, or within 30s, instead of at once; "+
					"allow +info for this Redis user (docs/operations.md)", zap.Error(err))
				warned = true
			}
			cur, err = nil, nil
		}
		switch {
		case err != nil:
			// unreachable: the batch in flight retries, and the next look decides
		case !looked:
			reason = "start"
		case !maps.Equal(ids, cur):
			reason = "a redis server's identity changed"
		case c.opts.Reconnects != nil && c.opts.Reconnects() != dials:
			reason = "new connections to redis"
		case now.Sub(lastRun) >= offsetsEvery:
			reason = "periodic"
		}
		if reason != "" {
			if c.opts.Reconnects != nil {
				dials = c.opts.Reconnects()
			}
			ls, err := c.findLost(ctx)
			if err != nil {
				if ctx.Err() == nil {
					c.log.Debug("compare committed offsets with redis watermarks", zap.Error(err))
				}
			} else {
				ids, lastRun, looked = cur, now, true
				if len(ls) > 0 {
					c.log.Warn("committed records missing from redis", zap.String("found_at", reason), zap.Stringers("lost", ls))
					select {
					case jobs <- ls:
					case <-ctx.Done():
						return
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// findLost compares the group's committed offsets with the watermarks: a
// partition whose lowest watermark lies below its committed offset - 1 lost
// the records in between. The offsets are read first: watermarks only
// rise, and they rise before the offsets are committed. Nothing is lost
// while the projections are not ready (a replay rebuilds them).
func (c *Consumer) findLost(ctx context.Context) ([]lost, error) {
	if status, err := c.meta.Status(ctx); err != nil || status != coord.StatusReady {
		return nil, err
	}
	committed, err := c.kafka.Committed(ctx)
	if err != nil {
		return nil, err
	}
	ev, err := c.meta.ReadEvidence(ctx)
	if err != nil {
		return nil, err
	}
	byTP := map[offsets.TopicPartition]lost{}
	for tp, off := range committed {
		low, node, ok := ev.Lowest(tp.String())
		if ok && low < off-1 {
			byTP[tp] = lost{Topic: tp.Topic, Partition: tp.Partition, From: low + 1, To: off - 1, Node: node}
		}
	}
	return sortedLost(byTP), nil
}
