package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply/wire"
	"projector/pkg/projections"
)

// Sync is what a batch waits for once its writes are applied, before its
// offsets may be committed.
type Sync struct {
	// Replicas is how many replicas must have received the writes (WAIT); 0: none.
	Replicas int
	// AOF makes the writes wait until they are fsynced to the append-only
	// file of the master (and of Replicas replicas): WAITAOF, Redis 7.2+ and Valkey.
	AOF bool
	// Timeout bounds each wait; a wait that times out is retried.
	Timeout time.Duration
}

// On reports whether anything is waited for.
func (s Sync) On() bool { return s.Replicas > 0 || s.AOF }

// SyncError says a batch's writes did not reach the replicas or the AOF in time.
type SyncError struct {
	Node string
	What string
}

func (e *SyncError) Error() string { return "redis " + e.Node + ": " + e.What }

// sealer is the last step of a batch, after the global step: the seal.
type sealer struct {
	rdb    redis.UniversalClient
	keys   projections.Keys
	nodes  *masterWatermarks
	script *wire.Script
	sync   Sync
	// evidence raises each Redis Cluster master's own watermarks;
	// gapCheck refuses a batch on a master that went back in time.
	evidence, gapCheck bool
}

// seal records, on each master of a Redis Cluster, that the batch's
// user writes on it are complete (with evidence), and waits for replicas and
// the AOF (with sync). On a standalone server the global watermarks are the
// evidence: it only waits, when sync is on.
func (a *sealer) seal(ctx context.Context, ranges []Range) error {
	if len(ranges) == 0 {
		return nil
	}
	cc, cluster := a.rdb.(*redis.ClusterClient)
	if !a.sync.On() && (!cluster || !a.evidence) {
		return nil
	}
	check := wire.ModeGlobal
	if cluster && a.gapCheck {
		check = wire.ModeGlobalGaps
	}
	seal := func(ctx context.Context, c *redis.Client, key string) error {
		call := a.script.Start(2+3*len(ranges), key)
		call = append(call, check.Arg(), len(ranges))
		for _, r := range ranges {
			call = append(call, r.TP().String(), r.First, r.Last)
		}
		return a.node(ctx, c, call, ranges)
	}
	if !cluster {
		c, ok := a.rdb.(*redis.Client)
		if !ok {
			return fmt.Errorf("seal batch: unsupported redis client %T", a.rdb)
		}
		return seal(ctx, c, a.keys.NodeWatermarks("g"))
	}
	return a.nodes.forEach(ctx, cc, seal)
}

// node runs the seal call on one server, then WAIT and WAITAOF as configured.
func (a *sealer) node(ctx context.Context, c *redis.Client, call []any, ranges []Range) error {
	s := a.sync
	ms := max(s.Timeout.Milliseconds(), 1)
	var wait, waitAOF *redis.Cmd
	sealed := a.script.Exec(ctx, c, [][]any{call}, func(pipe redis.Pipeliner) {
		if s.Replicas > 0 {
			wait = pipe.Do(ctx, "WAIT", s.Replicas, ms)
		}
		if s.AOF {
			waitAOF = pipe.Do(ctx, "WAITAOF", 1, s.Replicas, ms)
		}
	})[0]
	node := c.Options().Addr
	r, err := wire.ReplyOf(sealed, len(ranges))
	if err != nil {
		return fmt.Errorf("seal batch on %s: %w", node, err)
	}
	switch r.Code {
	case wire.ReplyApplied:
		return checkWaits(s, node, wait, waitAOF)
	case wire.ReplyGap:
		return gapsOf(r, ranges, node)
	}
	return fmt.Errorf("seal batch on %s: %w", node, r.Unexpected())
}

// checkWaits checks the replies of WAIT and WAITAOF (nil: not sent) on node.
func checkWaits(s Sync, node string, wait, waitAOF *redis.Cmd) error {
	if wait != nil {
		n, err := wait.Int64()
		if err != nil {
			return fmt.Errorf("WAIT on %s: %w", node, err)
		}
		if n < int64(s.Replicas) {
			return &SyncError{Node: node, What: fmt.Sprintf("%d of %d replicas acknowledged the batch within %s (WAIT)", n, s.Replicas, s.Timeout)}
		}
	}
	if waitAOF != nil {
		got, err := waitAOF.Int64Slice()
		if err != nil {
			return fmt.Errorf("WAITAOF on %s: %w", node, err)
		}
		if len(got) != 2 || got[0] < 1 || got[1] < int64(s.Replicas) {
			return &SyncError{Node: node, What: fmt.Sprintf("the batch was not fsynced to the AOF of the master and %d replicas within %s (WAITAOF answered %v)", s.Replicas, s.Timeout, got)}
		}
	}
	return nil
}
