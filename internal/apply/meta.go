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

// PauseField is the meta field holding the token of a pause.
const PauseField = "pause"

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

// MetaStatus returns the status field of px:meta:{g} ("" when the hash is missing).
func (m *Meta) MetaStatus(ctx context.Context) (string, error) {
	s, err := m.rdb.HGet(ctx, m.keys.Meta(), "status").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", m.keys.Meta(), err)
	}
	return s, nil
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

// PauseToken returns the token of the pause in force ("" when status is not paused).
func (m *Meta) PauseToken(ctx context.Context) (string, error) {
	vals, err := m.rdb.HMGet(ctx, m.keys.Meta(), "status", PauseField).Result()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", m.keys.Meta(), err)
	}
	if s, _ := vals[0].(string); s != StatusPaused {
		return "", nil
	}
	tok, _ := vals[1].(string)
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
