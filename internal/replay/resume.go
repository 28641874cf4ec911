package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"projector/internal/config"
	"projector/internal/coord"
	"projector/pkg/projections"
)

// replayPlan is the recorded plan: the projections rebuilt, whether the end
// offsets are committed for the group at the end (--to latest), and every
// partition's span [first, end).
type replayPlan struct {
	Projections []string `json:"projections"`
	ToLatest    bool     `json:"to_latest"`
	Spans       ranges   `json:"spans"`
}

func (p replayPlan) encode() string {
	b, _ := json.Marshal(p) // strings, bools and integers only: cannot fail
	return string(b)
}

// recordedPlan decodes the plan field (nil when there is none).
func recordedPlan(raw string) (*replayPlan, error) {
	if raw == "" {
		return nil, nil
	}
	var p replayPlan
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, fmt.Errorf("decode the recorded plan %q: %w", raw, err)
	}
	return &p, nil
}

// remaining is what is left of plan after the global watermarks wms
// (px:wm:{g}, field "topic:partition", value the last offset whose global
// effects are applied): each span starts after its watermark. The records
// at or below a watermark are applied whole, since a batch's global phase,
// which raises the watermarks, follows its user phase; the records of a
// batch in flight above it are applied again, and the idempotency markers
// their user writes set make that exactly once.
func remaining(plan ranges, wms map[string]string) ranges {
	out := make(ranges, 0, len(plan))
	for _, s := range plan {
		if v, ok := wms[s.Topic+":"+strconv.Itoa(s.Partition)]; ok {
			if wm, err := strconv.ParseInt(v, 10, 64); err == nil && wm+1 > s.First {
				s.First = min(wm+1, s.End)
			}
		}
		out = append(out, s)
	}
	return out
}

// interrupted returns the plan of an interrupted replay after data loss
// (status rebuilding and a recorded plan), nil when there is none. It
// refuses when that replay rebuilt other projections than names.
func interrupted(st coord.State, names []string, key string) (*replayPlan, error) {
	rec, err := recordedPlan(st.Interrupted())
	if err != nil || rec == nil {
		return nil, err
	}
	if !slices.Equal(rec.Projections, names) {
		return nil, fmt.Errorf("refusing: %s records an interrupted replay of %s, but this configuration enables %s; run the replayer with the configuration of that replay (or delete the field %s to start over)",
			key, strings.Join(rec.Projections, ","), strings.Join(names, ","), coord.FieldPlan)
	}
	return rec, nil
}

// startReplay marks the meta hash rebuilding, deletes whatever consumers
// wrote after the loss (partial) and every projection's keys and the
// bookkeeping, then records the plan. A replayer that dies before the plan
// is recorded leaves status rebuilding without one: its rerun starts over.
func startReplay(ctx context.Context, rdb redis.UniversalClient, m *coord.Meta, prefix string, p replayPlan) (int64, error) {
	if err := m.StartReplay(ctx); err != nil {
		return 0, err
	}
	wiped, err := wipe(ctx, rdb, append(patterns(prefix, projections.Names()), bookkeeping(prefix)...))
	if err != nil {
		return wiped, fmt.Errorf("wipe partial state: %w", err)
	}
	return wiped, m.RecordPlan(ctx, p.encode())
}

// resumeReplay checks, under the lease, that the interrupted replay seen
// before (its plan seen) is still the one recorded, and returns what is
// left of plan after the global watermarks.
func resumeReplay(ctx context.Context, rdb redis.UniversalClient, m *coord.Meta, keys projections.Keys, seen string, plan ranges) (ranges, error) {
	st, err := m.Read(ctx)
	if err != nil {
		return nil, err
	}
	if st.Interrupted() != seen {
		return nil, fmt.Errorf("refusing: %s changed while the replayer started (another replayer ran meanwhile); run it again", m.Key())
	}
	wms, err := rdb.HGetAll(ctx, keys.Watermarks()).Result()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", keys.Watermarks(), err)
	}
	return remaining(plan, wms), nil
}

// finishReplay marks the meta hash ready for the consumers and removes the
// plan and the progress.
func finishReplay(ctx context.Context, m *coord.Meta, cfg config.Config, names []string, replayed int64) error {
	return m.FinishReplay(ctx, replayed, coord.Info(cfg.Kafka.GroupID, cfg.TimeZone, names))
}

// dryRun says what a replay after data loss would do.
func dryRun(ctx context.Context, out io.Writer, rdb redis.UniversalClient, prefix string, names []string, plan ranges, resumed bool) error {
	keys := projections.Keys{Prefix: prefix}
	if !resumed {
		fmt.Fprintf(out, "dry run: would wipe %v and bookkeeping, read %d records (%s), rebuild %v, then mark %s ready\n",
			patterns(prefix, names), plan.total(), plan.String(), names, keys.Meta())
		return nil
	}
	wms, err := rdb.HGetAll(ctx, keys.Watermarks()).Result()
	if err != nil {
		return fmt.Errorf("read %s: %w", keys.Watermarks(), err)
	}
	todo := remaining(plan, wms)
	fmt.Fprintf(out, "dry run: would resume the interrupted replay recorded in %s (%d of %d records applied), read %d records (%s), then mark it ready\n",
		keys.Meta(), plan.total()-todo.total(), plan.total(), todo.total(), todo.String())
	return nil
}
