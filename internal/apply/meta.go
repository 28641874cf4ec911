package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// Meta statuses of px:meta:{g}.
const (
	StatusReady      = "ready"
	StatusRebuilding = "rebuilding"
	// StatusPaused: a replayer rebuilds projections with per-user keys and
	// asked the consumers to stop between batches (the meta field PauseField
	// holds its token, which each consumer acknowledges in px:cfg:{g}).
	StatusPaused = "paused"
	// StatusRolledBack: Redis went back in time further than a consumer can
	// repair (older than idempotency.window or than Kafka's retention); the
	// replayer rebuilds as after a data loss.
	StatusRolledBack = "rolled_back"
)

// Meta fields a replayer rebuilding projections next to running consumers
// sets (docs/contract.md section 6.2).
const (
	// PauseField holds the token of a pause (status paused).
	PauseField = "pause"
	// SyncField holds a token that each consumer acknowledges between two
	// batches without stopping: once all did, no batch planned before the
	// holds set with it is in flight.
	SyncField = "sync"
	// RebuildField names the projections being rebuilt ("p1,p2").
	RebuildField = "rebuild"
)

// effective is the status a consumer goes by: a pause whose replayer's
// lease is gone (the replayer died) does not stop it; the holds stay.
func effective(status string, leaseHeld bool) string {
	if status == StatusPaused && !leaseHeld {
		return StatusReady
	}
	return status
}

// Meta reads and writes the meta hash px:meta:{g}, and reads what Redis
// holds as applied and which servers it is: what a consumer asks of Redis
// beside applying batches.
type Meta struct {
	rdb   redis.UniversalClient
	keys  projections.Keys
	now   func() time.Time
	nodes masterWatermarks
}

// NewMeta returns the Meta of the projections under keyPrefix. evidence
// makes ReadEvidence read, on Redis Cluster, each master's own watermarks
// too (those an Applier with Guards.Evidence keeps).
func NewMeta(rdb redis.UniversalClient, keyPrefix string, now func() time.Time, evidence bool) *Meta {
	keys := projections.Keys{Prefix: keyPrefix}
	return &Meta{rdb: rdb, keys: keys, now: now, nodes: masterWatermarks{rdb: rdb, keys: keys, on: evidence}}
}

// MetaStatus returns the status field of px:meta:{g} ("" when the hash is
// missing), ready for a pause whose replayer's lease is gone.
func (m *Meta) MetaStatus(ctx context.Context) (string, error) {
	pipe := m.rdb.Pipeline()
	st := pipe.HGet(ctx, m.keys.Meta(), "status")
	lease := pipe.Exists(ctx, m.keys.Lease())
	_, _ = pipe.Exec(ctx)
	s, err := st.Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", m.keys.Meta(), err)
	}
	n, err := lease.Result()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", m.keys.Lease(), err)
	}
	return effective(s, n > 0), nil
}

// InitMeta creates px:meta:{g} with status ready unless it exists; info fields
// (group, time zone, projections) are recorded beside it. It reports whether
// it created the hash.
func (m *Meta) InitMeta(ctx context.Context, info map[string]string) (bool, error) {
	key := m.keys.Meta()
	created, err := m.rdb.HSetNX(ctx, key, "status", StatusReady).Result()
	if err != nil {
		return false, fmt.Errorf("write %s: %w", key, err)
	}
	if !created {
		return false, nil
	}
	vals := []any{"created_ms", m.now().UnixMilli()}
	for k, v := range info {
		vals = append(vals, k, v)
	}
	if err := m.rdb.HSet(ctx, key, vals...).Err(); err != nil {
		return true, fmt.Errorf("write %s: %w", key, err)
	}
	return true, nil
}

// PauseToken returns the token a consumer acknowledges between batches: the
// pause's while status is paused, else the sync token ("" when neither).
func (m *Meta) PauseToken(ctx context.Context) (string, error) {
	vals, err := m.rdb.HMGet(ctx, m.keys.Meta(), "status", PauseField, SyncField).Result()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", m.keys.Meta(), err)
	}
	if s, _ := vals[0].(string); s == StatusPaused {
		tok, _ := vals[1].(string)
		return tok, nil
	}
	tok, _ := vals[2].(string)
	return tok, nil
}

// MarkRolledBack sets status rolled_back (with the reason) unless a replay
// already runs, so that consumers stop and a replayer rebuilds everything.
func (m *Meta) MarkRolledBack(ctx context.Context, why string) error {
	key := m.keys.Meta()
	err := markRolledBack.Run(ctx, m.rdb, []string{key}, StatusRolledBack, why, m.now().UnixMilli()).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("mark %s %s: %w", key, StatusRolledBack, err)
	}
	return nil
}

// markRolledBack sets the status unless it says rebuilding.
var markRolledBack = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'status') == 'rebuilding' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'rolled_back_reason', ARGV[2], 'rolled_back_ms', ARGV[3])
return 1`)
