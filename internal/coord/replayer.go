package coord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The replayer's transitions of the meta hash. A replayer holds the lease
// (Lease) for as long as it runs any of them.

// StartReplay marks the hash rebuilding (a replay after data loss) and
// deletes an earlier plan and progress; RecordPlan records the plan once the
// partial state is wiped. A replayer that dies in between leaves status
// rebuilding without a plan: its rerun starts over.
func (m *Meta) StartReplay(ctx context.Context) error {
	pipe := m.rdb.TxPipeline()
	pipe.HSet(ctx, m.keys.Meta(), FieldStatus, StatusRebuilding, FieldRebuildStartedMs, m.now().UnixMilli())
	pipe.HDel(ctx, m.keys.Meta(), append([]string{FieldPlan}, ProgressFields()...)...)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("mark %s rebuilding: %w", m.keys.Meta(), err)
	}
	return nil
}

// RecordPlan records the plan of a replay after data loss.
func (m *Meta) RecordPlan(ctx context.Context, plan string) error {
	if err := m.rdb.HSet(ctx, m.keys.Meta(), FieldPlan, plan).Err(); err != nil {
		return fmt.Errorf("record the replay plan in %s: %w", m.keys.Meta(), err)
	}
	return nil
}

// Interrupted returns the plan of an interrupted replay after data loss
// (status rebuilding with a recorded plan; "" when there is none).
func (s State) Interrupted() string {
	if s.Status != StatusRebuilding {
		return ""
	}
	return s.Fields[FieldPlan]
}

// FinishReplay marks the hash ready for the consumers with what the replay
// did (info: group, time zone, projections) and removes the plan and the
// progress.
func (m *Meta) FinishReplay(ctx context.Context, replayed int64, info map[string]string) error {
	vals := []any{FieldStatus, StatusReady, FieldReplayedMs, m.now().UnixMilli(), FieldReplayedRecords, replayed}
	for k, v := range info {
		vals = append(vals, k, v)
	}
	pipe := m.rdb.TxPipeline()
	pipe.HSet(ctx, m.keys.Meta(), vals...)
	pipe.HDel(ctx, m.keys.Meta(), append([]string{FieldPlan}, ProgressFields()...)...)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("mark %s ready: %w", m.keys.Meta(), err)
	}
	return nil
}

// PublishProgress writes the replayer's progress as of at.
func (m *Meta) PublishProgress(ctx context.Context, done, total, rate int64, at time.Time) error {
	return m.rdb.HSet(ctx, m.keys.Meta(), FieldDone, done, FieldTotal, total, FieldRate, rate, FieldUpdatedMs, at.UnixMilli()).Err()
}

// Start is what StartRebuild found.
type Start struct {
	// Started: the rebuild began (its fields and holds are set).
	Started bool
	// Resume: a rebuild of the same projections is pending: its ID, and
	// whether its keys were wiped already.
	Resume bool
	ID     string
	Wiped  bool
	// Busy names the projections of another pending rebuild.
	Busy string
	// Refused is the status that refuses a rebuild (not ready or paused).
	Refused string
}

// StartRebuild begins a rebuild of names next to running consumers (a
// chase: the holds HoldAll, the rebuild's ID and a sync token in one step),
// or finds one to resume. A pause left by a replayer that died ends here.
func (m *Meta) StartRebuild(ctx context.Context, names []string, id, sync string) (Start, error) {
	joined := strings.Join(names, ",")
	args := []any{joined, FieldRebuild, joined, FieldRebuildID, id, FieldSync, sync}
	for _, n := range names {
		args = append(args, HoldField(n), HoldAll)
	}
	got, err := startScript.Run(ctx, m.rdb, []string{m.keys.Meta()}, args...).Text()
	if err != nil {
		return Start{}, fmt.Errorf("start the rebuild: %w", err)
	}
	switch kind, rest, _ := strings.Cut(got, ":"); kind {
	case "ok":
		return Start{Started: true, ID: id}, nil
	case "resume":
		id, wiped, _ := strings.Cut(rest, ":")
		return Start{Resume: true, ID: id, Wiped: wiped != ""}, nil
	case "busy":
		return Start{Busy: rest}, nil
	}
	return Start{Refused: got}, nil
}

// startScript begins a rebuild of ARGV[1], or finds one to resume. It
// refuses (returns the status) unless the status is ready or paused (a
// pause left by a replayer that died: ended here); it returns "busy:<names>"
// while a rebuild of other projections is pending, "resume:<id>:<wiped>"
// when one of the same projections is, and otherwise sets the fields
// ARGV[2..] (rebuild, its id, the sync token, the holds) and returns "ok".
var startScript = redis.NewScript(`
local s = redis.call('HGET', KEYS[1], '` + FieldStatus + `')
if s ~= '` + StatusReady + `' and s ~= '` + StatusPaused + `' then return s or '' end
if s == '` + StatusPaused + `' then
  redis.call('HSET', KEYS[1], '` + FieldStatus + `', '` + StatusReady + `')
  redis.call('HDEL', KEYS[1], '` + FieldPause + `', '` + FieldPauseProjections + `')
end
local cur = redis.call('HGET', KEYS[1], '` + FieldRebuild + `')
if cur and cur ~= ARGV[1] then return 'busy:' .. cur end
if cur then
  return 'resume:' .. (redis.call('HGET', KEYS[1], '` + FieldRebuildID + `') or '') .. ':' .. (redis.call('HGET', KEYS[1], '` + FieldRebuildWiped + `') or '')
end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return 'ok'`)

// SetSync sets a fresh sync token.
func (m *Meta) SetSync(ctx context.Context, token string) error {
	if err := m.rdb.HSet(ctx, m.keys.Meta(), FieldSync, token).Err(); err != nil {
		return fmt.Errorf("set the sync token: %w", err)
	}
	return nil
}

// MarkWiped records that the rebuild's keys were wiped (a rerun skips the
// sync and the wipe).
func (m *Meta) MarkWiped(ctx context.Context) error {
	if err := m.rdb.HSet(ctx, m.keys.Meta(), FieldRebuildWiped, m.now().UnixMilli()).Err(); err != nil {
		return fmt.Errorf("record the wipe in %s: %w", m.keys.Meta(), err)
	}
	return nil
}

// RebuildFields are the fields a rebuild of names sets, deleted at its end.
func RebuildFields(names []string) []string {
	fields := []string{FieldRebuild, FieldRebuildID, FieldRebuildWiped, FieldSync, FieldPause, FieldPauseProjections}
	for _, n := range names {
		fields = append(fields, HoldField(n))
	}
	return append(fields, ProgressFields()...)
}

// HoldAllOf starts a rebuild of global projections by a hold: rebuild =
// names, and the holds HoldAll (consumers leave them out from their next
// batch on; a batch planned before is refused by the apply script).
func (m *Meta) HoldAllOf(ctx context.Context, names []string) error {
	vals := []any{FieldRebuild, strings.Join(names, ",")}
	for _, n := range names {
		vals = append(vals, HoldField(n), HoldAll)
	}
	if err := m.rdb.HSet(ctx, m.keys.Meta(), vals...).Err(); err != nil {
		return fmt.Errorf("hold %v: %w", names, err)
	}
	return nil
}

// CutHolds sets the holds of names to the consumers' watermarks (px:wm:{g})
// of every partition (-1 where a partition has none: no record of it is
// held), read and set in one transaction, and returns them. A record at or
// below its watermark has been applied by a consumer, its marker is final
// and names the copy of a duplicate that the consumers applied, so a replay
// decides it as they did; the consumers apply every later record with the
// projections.
func (m *Meta) CutHolds(ctx context.Context, names, partitions []string) (map[string]int64, error) {
	for {
		var upTo map[string]int64
		err := m.rdb.Watch(ctx, func(tx *redis.Tx) error {
			wms, err := tx.HGetAll(ctx, m.keys.Watermarks()).Result()
			if err != nil {
				return err
			}
			upTo = map[string]int64{}
			for _, p := range partitions {
				upTo[p] = -1
				if w, err := strconv.ParseInt(wms[p], 10, 64); err == nil {
					upTo[p] = w
				}
			}
			hold := HoldUpTo(upTo)
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, n := range names {
					p.HSet(ctx, m.keys.Meta(), HoldField(n), hold)
				}
				return nil
			})
			return err
		}, m.keys.Watermarks())
		if errors.Is(err, redis.TxFailedErr) {
			continue // a consumer completed a batch meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("hold %v up to the consumers' watermarks: %w", names, err)
		}
		return upTo, nil
	}
}

// ReleaseHolds deletes the holds of names and the rebuild's fields once
// the consumers' watermarks reached upTo, and reports whether it did.
func (m *Meta) ReleaseHolds(ctx context.Context, names []string, upTo map[string]int64) (bool, error) {
	args := []any{len(upTo)}
	for f, o := range upTo {
		args = append(args, f, o)
	}
	for _, f := range RebuildFields(names) {
		args = append(args, f)
	}
	ok, err := releaseHolds.Run(ctx, m.rdb, []string{m.keys.Watermarks(), m.keys.Meta()}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("release the holds of %v: %w", names, err)
	}
	return ok == 1, nil
}

// LiftHolds deletes the holds of names and the rebuild's fields at once
// (a hold rebuild that failed: the consumers write the projections again).
func (m *Meta) LiftHolds(ctx context.Context, names []string) error {
	return m.rdb.HDel(ctx, m.keys.Meta(), RebuildFields(names)...).Err()
}

// releaseHolds ends a hold once the consumers' watermarks (KEYS[1]) reached
// the replayed offsets: ARGV n, n x (field, last replayed offset), then the
// meta fields to delete from KEYS[2]. Returns 1 when released.
var releaseHolds = redis.NewScript(`
local n = tonumber(ARGV[1])
for j = 0, n - 1 do
  local wm = redis.call('HGET', KEYS[1], ARGV[2 + 2 * j])
  if (tonumber(wm) or -1) < tonumber(ARGV[3 + 2 * j]) then return 0 end
end
for j = 2 + 2 * n, #ARGV do redis.call('HDEL', KEYS[2], ARGV[j]) end
return 1`)

// Pause pauses the consumers for a handover: status paused with token and
// the projections. It reports whether it did, and else the status that
// refuses it ("" for a missing hash; only ready, or a pause of an earlier
// rebuild that did not finish, can be paused).
func (m *Meta) Pause(ctx context.Context, token string, names []string) (bool, string, error) {
	got, err := pauseScript.Run(ctx, m.rdb, []string{m.keys.Meta()}, token, strings.Join(names, ",")).Text()
	if err != nil {
		return false, "", fmt.Errorf("pause the consumers: %w", err)
	}
	if got == "ok" {
		return true, "", nil
	}
	return false, got, nil
}

// pauseScript: status paused, pause token ARGV[1], projections ARGV[2];
// refused (returns the status) unless ready or paused.
var pauseScript = redis.NewScript(`
local s = redis.call('HGET', KEYS[1], '` + FieldStatus + `')
if s ~= '` + StatusReady + `' and s ~= '` + StatusPaused + `' then return s or '' end
redis.call('HSET', KEYS[1], '` + FieldStatus + `', '` + StatusPaused + `', '` + FieldPause + `', ARGV[1], '` + FieldPauseProjections + `', ARGV[2])
return 'ok'`)

// Resume ends the pause with token, if it is still this one.
func (m *Meta) Resume(ctx context.Context, token string) error {
	return resumeScript.Run(ctx, m.rdb, []string{m.keys.Meta()}, token).Err()
}

// resumeScript ends the pause with token ARGV[1]; returns 1 when it did.
var resumeScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], '` + FieldPause + `') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], '` + FieldStatus + `', '` + StatusReady + `')
redis.call('HDEL', KEYS[1], '` + FieldPause + `', '` + FieldPauseProjections + `')
return 1`)

// HandBack is what the end of a handover found.
type HandBack int

// The outcomes of HandBack.
const (
	// HandedBack: the holds and the rebuild's fields are gone, status ready.
	HandedBack HandBack = iota + 1
	// WatermarksMoved: a consumer completed a batch since wms were read;
	// nothing changed (replay up to the new watermarks and try again).
	WatermarksMoved
	// PauseLost: the hash no longer holds this pause.
	PauseLost
	// LeaseLost: the lease is no longer this replayer's.
	LeaseLost
)

// HandBack ends a chase rebuild of names in one step, if the pause token and
// the lease are still this replayer's and the consumers' watermarks are
// still wms (read with the consumers paused): it deletes the holds and the
// rebuild's fields and sets status ready.
func (m *Meta) HandBack(ctx context.Context, token string, lease *Lease, wms map[string]string, names []string) (HandBack, error) {
	args := []any{token, lease.token, len(wms)}
	for f, v := range wms {
		args = append(args, f, v)
	}
	for _, f := range RebuildFields(names) {
		args = append(args, f)
	}
	got, err := handBackScript.Run(ctx, m.rdb, []string{m.keys.Meta(), m.keys.Watermarks(), m.keys.Lease()}, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("hand the projections back: %w", err)
	}
	switch got {
	case 1:
		return HandedBack, nil
	case -1:
		return PauseLost, nil
	case -2:
		return LeaseLost, nil
	}
	return WatermarksMoved, nil
}

// handBackScript: KEYS meta, consumer watermarks, lease; ARGV pause token,
// lease token, n, n x (field, watermark), then the meta fields to delete.
// -1 / -2 unless the pause and the lease are still this replayer's; 0 when
// a watermark moved; else it deletes the fields, sets status ready, 1.
var handBackScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], '` + FieldPause + `') ~= ARGV[1] then return -1 end
if redis.call('GET', KEYS[3]) ~= ARGV[2] then return -2 end
local n = tonumber(ARGV[3])
if redis.call('HLEN', KEYS[2]) ~= n then return 0 end
for j = 0, n - 1 do
  if redis.call('HGET', KEYS[2], ARGV[4 + 2 * j]) ~= ARGV[5 + 2 * j] then return 0 end
end
for j = 4 + 2 * n, #ARGV do redis.call('HDEL', KEYS[1], ARGV[j]) end
redis.call('HSET', KEYS[1], '` + FieldStatus + `', '` + StatusReady + `')
return 1`)

// CheckpointPattern matches the rebuild's checkpoints px:rwm:* (deleted at
// its start and end).
func (m *Meta) CheckpointPattern() string { return m.keys.Prefix + "px:rwm:*" }

// Expect returns an error unless the hash holds the fields as given: a
// replayer checks before each batch of a rebuild that the state it set
// (the rebuild, its holds, the wipe) is still there. Redis that went back
// in time to before it (a restart from an older snapshot, a failover to a
// replica that lagged) holds projection keys the rebuild did not wipe, and
// replaying on top of them would count records twice; the run stops
// instead, and a rerun starts over or resumes from what Redis holds.
func (m *Meta) Expect(ctx context.Context, fields map[string]string) error {
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	vals, err := m.rdb.HMGet(ctx, m.keys.Meta(), names...).Result()
	if err != nil {
		return fmt.Errorf("read %s: %w", m.keys.Meta(), err)
	}
	for i, f := range names {
		if got, _ := vals[i].(string); got != fields[f] {
			return fmt.Errorf("%s holds %s = %q, not %q as this replayer set it: Redis went back in time or another replayer ended the rebuild; run the same command again", m.keys.Meta(), f, got, fields[f])
		}
	}
	return nil
}

// Fields returns the fields f of the hash as they are now ("" for missing ones).
func (m *Meta) Fields(ctx context.Context, f ...string) (map[string]string, error) {
	vals, err := m.rdb.HMGet(ctx, m.keys.Meta(), f...).Result()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", m.keys.Meta(), err)
	}
	out := make(map[string]string, len(f))
	for i, name := range f {
		out[name], _ = vals[i].(string)
	}
	return out, nil
}
