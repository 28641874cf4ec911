// Package coord owns the coordination protocol between the consumers, the
// replayer and the read API: the meta hash px:meta:{g} (its statuses and
// fields, the holds, the sync and pause tokens) and the replayer's lease
// px:lease:{g}. Every read and write of them goes through this package; its
// states and transitions are described in docs/design/coordination.md.
//
// The consumers read the state before every batch (State) and acknowledge
// tokens between batches; the apply script checks the status and the holds
// again atomically with a batch's global writes (the apply package renders
// the values it needs from the constants here). The replayer moves the state
// through the transitions (StartReplay, StartRebuild, CutHolds, Pause,
// HandBack, ...), holding the lease.
package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// The statuses of px:meta:{g} (field FieldStatus). A missing hash reads as
// the status "" (Redis lost its data, or was never initialised).
const (
	// StatusReady: consumers apply batches.
	StatusReady = "ready"
	// StatusRebuilding: a replay after data loss runs; consumers wait.
	StatusRebuilding = "rebuilding"
	// StatusPaused: a replayer hands rebuilt projections back and asked the
	// consumers to stop between batches (FieldPause holds its token, which
	// each consumer acknowledges in px:cfg:{g}). A pause whose replayer's
	// lease is gone does not stop them (Effective).
	StatusPaused = "paused"
	// StatusRolledBack: Redis went back in time further than a consumer can
	// repair; a replay rebuilds as after data loss.
	StatusRolledBack = "rolled_back"
)

// The fields of px:meta:{g}.
const (
	FieldStatus = "status"
	// FieldPause holds the token of a pause; FieldPauseProjections the
	// projections being handed back.
	FieldPause            = "pause"
	FieldPauseProjections = "pause_projections"
	// FieldSync holds a token that each consumer acknowledges between two
	// batches without stopping: once all did, no batch planned before the
	// holds set with it is in flight.
	FieldSync = "sync"
	// FieldRebuild names the projections being rebuilt next to running
	// consumers ("p1,p2"); FieldRebuildID the tag of the markers the rebuild
	// sets; FieldRebuildWiped when their keys were wiped (Unix ms).
	FieldRebuild      = "rebuild"
	FieldRebuildID    = "rebuild_id"
	FieldRebuildWiped = "rebuild_wiped_ms"
	// FieldPlan records the plan of a replay after data loss (JSON), so
	// that a rerun after a crash continues it.
	FieldPlan = "replay_plan"
	// FieldRolledBackReason and FieldRolledBackMs say why and when the
	// status became rolled_back.
	FieldRolledBackReason = "rolled_back_reason"
	FieldRolledBackMs     = "rolled_back_ms"
	// FieldCreatedMs is when a consumer created the hash at a first start.
	FieldCreatedMs = "created_ms"
	// FieldGroup, FieldTimeZone and FieldProjections describe what the
	// projections were made with (Info).
	FieldGroup       = "group"
	FieldTimeZone    = "time_zone"
	FieldProjections = "projections"
	// FieldRebuildStartedMs, FieldReplayedMs and FieldReplayedRecords
	// describe the last replay after data loss.
	FieldRebuildStartedMs = "rebuild_started_ms"
	FieldReplayedMs       = "replayed_ms"
	FieldReplayedRecords  = "replayed_records"
	// The replayer's progress: records done and planned, its rate
	// (records/s) and when it last wrote them (Unix ms).
	FieldDone      = "rebuild_done"
	FieldTotal     = "rebuild_total"
	FieldRate      = "rebuild_rate"
	FieldUpdatedMs = "rebuild_updated_ms"
)

// ProgressFields are the replayer's progress fields, deleted when a replay ends.
func ProgressFields() []string { return []string{FieldDone, FieldTotal, FieldRate, FieldUpdatedMs} }

// Info is the description of the projections that Init and FinishReplay
// record: the group, the time zone and the projections.
func Info(group, timeZone string, projections []string) map[string]string {
	return map[string]string{FieldGroup: group, FieldTimeZone: timeZone, FieldProjections: strings.Join(projections, ",")}
}

// Meta reads and moves the protocol's state in Redis.
type Meta struct {
	rdb  redis.UniversalClient
	keys projections.Keys
	now  func() time.Time
}

// New returns the Meta of the projections under keyPrefix.
func New(rdb redis.UniversalClient, keyPrefix string, now func() time.Time) *Meta {
	return &Meta{rdb: rdb, keys: projections.Keys{Prefix: keyPrefix}, now: now}
}

// Key is the meta hash's key.
func (m *Meta) Key() string { return m.keys.Meta() }

// Effective is the status a consumer goes by: a pause whose replayer's lease
// is gone (the replayer died) does not stop it; the holds stay.
func Effective(status string, leaseHeld bool) string {
	if status == StatusPaused && !leaseHeld {
		return StatusReady
	}
	return status
}

// State is the meta hash as the consumers and the read API see it.
type State struct {
	// Status is the status field ("" when the hash is missing).
	Status string
	// Holds are the projections held by a rebuild.
	Holds Holds
	// HoldsRaw are the hold fields as (field, value) pairs, as the apply
	// script compares them (nil: none).
	HoldsRaw []string
	// Fields is the whole hash.
	Fields map[string]string
}

// Parse reads a State from the meta hash's fields.
func Parse(fields map[string]string) State {
	h, raw := parseHolds(fields)
	return State{Status: fields[FieldStatus], Holds: h, HoldsRaw: raw, Fields: fields}
}

// Queue queues the reads of State and of the lease on pipe; the returned
// function parses them once the pipeline ran: the state and whether a
// replayer's lease is held.
func (m *Meta) Queue(ctx context.Context, pipe redis.Pipeliner) func() (State, bool, error) {
	meta := pipe.HGetAll(ctx, m.keys.Meta())
	lease := pipe.Exists(ctx, m.keys.Lease())
	return func() (State, bool, error) {
		fields, err := meta.Result()
		if err != nil {
			return State{}, false, fmt.Errorf("read %s: %w", m.keys.Meta(), err)
		}
		n, err := lease.Result()
		if err != nil {
			return State{}, false, fmt.Errorf("read %s: %w", m.keys.Lease(), err)
		}
		return Parse(fields), n > 0, nil
	}
}

// Status returns the effective status ("" when the hash is missing).
func (m *Meta) Status(ctx context.Context) (string, error) {
	pipe := m.rdb.Pipeline()
	st := pipe.HGet(ctx, m.keys.Meta(), FieldStatus)
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
	return Effective(s, n > 0), nil
}

// Init creates the hash with status ready unless it exists, with the info
// fields (group, time zone, projections) beside it. It reports whether it
// created the hash.
func (m *Meta) Init(ctx context.Context, info map[string]string) (bool, error) {
	key := m.keys.Meta()
	created, err := m.rdb.HSetNX(ctx, key, FieldStatus, StatusReady).Result()
	if err != nil {
		return false, fmt.Errorf("write %s: %w", key, err)
	}
	if !created {
		return false, nil
	}
	vals := []any{FieldCreatedMs, m.now().UnixMilli()}
	for k, v := range info {
		vals = append(vals, k, v)
	}
	if err := m.rdb.HSet(ctx, key, vals...).Err(); err != nil {
		return true, fmt.Errorf("write %s: %w", key, err)
	}
	return true, nil
}

// Token returns the token a consumer acknowledges between batches: the
// pause's while status is paused, else the sync token ("" when neither).
func (m *Meta) Token(ctx context.Context) (string, error) {
	vals, err := m.rdb.HMGet(ctx, m.keys.Meta(), FieldStatus, FieldPause, FieldSync).Result()
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
if redis.call('HGET', KEYS[1], '` + FieldStatus + `') == '` + StatusRebuilding + `' then return 0 end
redis.call('HSET', KEYS[1], '` + FieldStatus + `', ARGV[1], '` + FieldRolledBackReason + `', ARGV[2], '` + FieldRolledBackMs + `', ARGV[3])
return 1`)

// Read returns the whole meta hash (empty when it is missing).
func (m *Meta) Read(ctx context.Context) (State, error) {
	fields, err := m.rdb.HGetAll(ctx, m.keys.Meta()).Result()
	if err != nil {
		return State{}, fmt.Errorf("read %s: %w", m.keys.Meta(), err)
	}
	return Parse(fields), nil
}

// Int returns the field f of the state as an integer (0 when absent or not one).
func (s State) Int(f string) int64 {
	v, _ := strconv.ParseInt(s.Fields[f], 10, 64)
	return v
}

// Rebuilding returns the projections being rebuilt: those of a rebuild
// next to running consumers, or those of the plan of a replay after data
// loss ("all" before the plan is recorded); none otherwise.
func (s State) Rebuilding() []string {
	if v := s.Fields[FieldRebuild]; v != "" {
		return strings.Split(v, ",")
	}
	if s.Status != StatusRebuilding {
		return nil
	}
	var plan struct {
		Projections []string `json:"projections"` // the replayer's plan names them so
	}
	if json.Unmarshal([]byte(s.Fields[FieldPlan]), &plan) == nil && len(plan.Projections) > 0 {
		return plan.Projections
	}
	return []string{"all"}
}

// Progress is the replayer's progress as it last wrote it.
type Progress struct {
	Done, Total int64
	// Rate is in records per second.
	Rate int64
	// UpdatedMs is when it was written (Unix ms; 0: never).
	UpdatedMs int64
}

// Progress returns the replayer's progress.
func (s State) Progress() Progress {
	return Progress{Done: s.Int(FieldDone), Total: s.Int(FieldTotal), Rate: s.Int(FieldRate), UpdatedMs: s.Int(FieldUpdatedMs)}
}
