// Package replay rebuilds projections from the canonical event log in Kafka
// after Redis lost data (docs/contract.md section 6), with the consumer's own planner and
// applier, and hands over to the consumers through the watermarks it leaves. A
// replay records its plan in Redis, so that a rerun after a crash continues it
// from those watermarks.
package replay

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"projector/internal/app"
	"projector/internal/apply"
	"projector/internal/config"
	"projector/internal/coord"
	"projector/internal/fingerprint"
	"projector/internal/records"
	"projector/internal/redischeck"
	"projector/pkg/projections"
)

// Options are the replayer's own flags.
type Options struct {
	// Projections to rebuild (nil: all enabled ones).
	Projections []string
	// ToLatest replays to the end of the log and commits it for the group.
	ToLatest bool
	// AllowPartial accepts a log whose beginning Kafka no longer holds.
	AllowPartial bool
	// Wipe confirms that a single-projection rebuild deletes the projection's keys first.
	Wipe bool
	// DryRun only says what would be read and written.
	DryRun bool
	// BatchSize is the number of records applied per batch (0: FullBatch
	// after a data loss, when the consumers wait anyway; RebuildBatch for a
	// rebuild of some projections next to running consumers).
	BatchSize int
	// MaxRate limits the replay to that many records per second (0: no
	// limit); the handover of a rebuild is never limited, to keep its pause short.
	MaxRate int
	// Parallel is the number of lanes of partitions whose batches are applied
	// concurrently after a data loss (0: DefaultParallel).
	Parallel int
	// Progress receives progress lines (a terminal bar when Terminal).
	Progress *os.File
	Terminal bool
}

// Summary is what a replay did.
type Summary struct {
	Events int64 // records read
	// Skipped counts the offsets without a record to read: transaction
	// markers and records of aborted transactions.
	Skipped    int64
	ByType     map[string]int64
	Duplicates int64
	Poison     int64
	Writes     int64
	Wiped      int64
	// Before counts the offsets an interrupted run covered (resumed).
	Before   int64
	Duration time.Duration
}

// add adds the counts of o.
func (s *Summary) add(o Summary) {
	if s.ByType == nil {
		s.ByType = map[string]int64{}
	}
	for t, n := range o.ByType {
		s.ByType[t] += n
	}
	s.Events += o.Events
	s.Skipped += o.Skipped
	s.Duplicates += o.Duplicates
	s.Poison += o.Poison
	s.Writes += o.Writes
}

// String formats the final summary.
func (s Summary) String() string {
	var types []string
	for t, n := range s.ByType {
		types = append(types, fmt.Sprintf("%s=%d", t, n))
	}
	sort.Strings(types)
	line := fmt.Sprintf("replayed %d records in %v (%.0f ev/s): applied {%s}, duplicates %d, poison %d, writes %d, keys wiped first %d",
		s.Events, s.Duration.Round(time.Millisecond), float64(s.Events)/max(s.Duration.Seconds(), 1e-9),
		strings.Join(types, " "), s.Duplicates, s.Poison, s.Writes, s.Wiped)
	if s.Skipped > 0 {
		line += fmt.Sprintf(", %d offsets of transaction markers and aborted transactions skipped", s.Skipped)
	}
	if s.Before > 0 {
		line += fmt.Sprintf(", resumed after %d records applied by the interrupted run", s.Before)
	}
	return line
}

// Default batch sizes. A full replay's batch holds more events per user,
// whose writes coalesce into fewer calls and commands per event; larger
// batches than FullBatch cost memory without a steady gain (BENCHMARKS.md,
// findings). A rebuild next to running consumers keeps each batch's global
// script call short, since live batches wait behind it.
const (
	FullBatch    = 50_000
	RebuildBatch = 10_000
)

// DefaultParallel is the replay's default number of lanes (Options.Parallel).
// One lane keeps Redis and the replayer busy at once (it reads and plans the
// next batch while Redis applies the previous one); where they share the
// cores, more lanes cost CPU and memory per lane without a steady gain
// (BENCHMARKS.md, replay lanes).
const DefaultParallel = 1

// parallelOr returns n, or DefaultParallel when n is not set.
func parallelOr(n int) int { return batchOr(n, DefaultParallel) }

// batchOr returns n, or def when n is not set.
func batchOr(n, def int) int {
	if n < 1 {
		return def
	}
	return n
}

// Run rebuilds after Redis lost its data. It refuses (with an error saying
// why) when a server's maxmemory-policy evicts keys (*redischeck.EvictionError,
// unless redis.allow_eviction), when nothing was lost, when another replayer
// runs, or when Kafka no longer holds the beginning of the log (unless
// AllowPartial). A replay that was interrupted (status rebuilding with a
// recorded plan) is continued from the global watermarks, without a wipe.
func Run(ctx context.Context, cfg config.Config, opts Options, log *zap.Logger) (Summary, error) {
	start := time.Now()
	sum := Summary{ByType: map[string]int64{}}
	if named := opts.Projections; len(named) > 0 {
		opts.Projections = projections.WithReaders(cfg.Projections, named)
		if len(opts.Projections) > len(named) {
			fmt.Fprintf(opts.Progress, "rebuilding %s: the writes of %s read the keys of %s\n", strings.Join(opts.Projections, ","),
				strings.Join(slices.DeleteFunc(slices.Clone(opts.Projections), func(n string) bool { return slices.Contains(named, n) }), ","),
				strings.Join(named, ","))
		}
	}
	sel, err := selectProjections(cfg.Projections, opts.Projections)
	if err != nil {
		return sum, err
	}
	rdb := app.NewRedis(cfg.Redis)
	defer rdb.Close()
	if _, err := redischeck.Check(ctx, rdb, cfg.Redis.AllowEviction, log); err != nil {
		return sum, err
	}
	m := coord.New(rdb, cfg.Redis.KeyPrefix, time.Now)
	st, err := m.Read(ctx)
	if err != nil {
		return sum, err
	}
	status := st.Status
	diffs, err := fingerprint.Disagreements(ctx, rdb, cfg.Redis.KeyPrefix, fingerprint.Of(cfg))
	if err != nil {
		return sum, err
	}
	if len(diffs) > 0 {
		return sum, fmt.Errorf("refusing: the configuration disagrees with the running consumers' (%s); use theirs", strings.Join(diffs, "; "))
	}
	if status == coord.StatusReady || status == coord.StatusPaused {
		if len(opts.Projections) == 0 {
			return sum, fmt.Errorf("refusing: %s says status %s, so Redis did not lose its data; to rebuild a projection name it with --projections (and --wipe --yes)", m.Key(), status)
		}
		return rebuildSelected(ctx, cfg, opts, rdb, projections.EnabledNames(sel), log)
	}
	names := projections.EnabledNames(sel)
	if all := projections.EnabledNames(cfg.Projections); len(names) != len(all) {
		return sum, fmt.Errorf("refusing: after Redis lost its data every enabled projection (%s) is rebuilt; --projections selects projections to rebuild while Redis is intact", strings.Join(all, ","))
	}
	rec, err := interrupted(st, names, m.Key())
	if err != nil {
		return sum, err
	}
	plan, toLatest := ranges(nil), opts.ToLatest
	if rec != nil {
		plan, toLatest = rec.Spans, rec.ToLatest
	} else {
		if plan, err = planRanges(ctx, cfg, opts.ToLatest); err != nil {
			return sum, err
		}
		if gaps := plan.gaps(); len(gaps) > 0 && !opts.AllowPartial {
			return sum, fmt.Errorf("refusing: Kafka no longer holds the beginning of the log (%s); the rebuilt projections would miss those events; pass --allow-partial to rebuild from what is left", strings.Join(gaps, ", "))
		}
	}
	log.Info("replay plan", zap.Strings("projections", names), zap.Int64("records", plan.total()), zap.String("ranges", plan.String()),
		zap.Bool("resumed", rec != nil))
	if opts.DryRun {
		return sum, dryRun(ctx, opts.Progress, rdb, cfg.Redis.KeyPrefix, names, plan, rec != nil)
	}
	l, err := m.AcquireLease(ctx, records.ProcessName(), coord.LeaseTTL)
	if err != nil {
		return sum, err
	}
	defer l.Release(context.WithoutCancel(ctx))
	todo := plan
	if rec == nil {
		if sum.Wiped, err = startReplay(ctx, rdb, m, cfg.Redis.KeyPrefix, replayPlan{Projections: names, ToLatest: toLatest, Spans: plan}); err != nil {
			return sum, err
		}
	} else if todo, err = resumeReplay(ctx, rdb, m, projections.Keys{Prefix: cfg.Redis.KeyPrefix}, st.Interrupted(), plan); err != nil {
		return sum, err
	}
	sum.Before = plan.total() - todo.total()
	if rec != nil {
		fmt.Fprintf(opts.Progress, "resuming the interrupted replay recorded in %s: %d of %d records were applied before; reading %d (%s)\n",
			m.Key(), sum.Before, plan.total(), todo.total(), todo.String())
	}
	planner, err := projections.NewPlanner(sel, cfg.Location, cfg.Redis.KeyPrefix)
	if err != nil {
		return sum, err
	}
	applier := apply.New(rdb, planner, applyOptions(cfg), apply.Guards{IgnoreMeta: true, Evidence: true,
		Sync: apply.Sync{Replicas: cfg.Redis.Wait.Replicas, AOF: cfg.Redis.Wait.AOF, Timeout: cfg.Redis.Wait.Timeout}})
	if err := applier.LoadScript(ctx); err != nil {
		return sum, err
	}
	prog := newProgress(opts.Progress, opts.Terminal, plan.total()).resumeAt(sum.Before).publishTo(ctx, m)
	if err := readAndApply(ctx, cfg, todo, batchOr(opts.BatchSize, FullBatch), applier, &sum, prog, withWorkers(parallelOr(opts.Parallel)),
		withPace(newPacer(opts.MaxRate, time.Now))); err != nil {
		return sum, err
	}
	prog.done()
	// After the replay, so that dead letters a consumer still wrote while
	// the replay ran (a batch in flight when Redis lost its data) are marked too.
	dead, err := rebuildDLQMarks(ctx, cfg, records.NewDLQMarks(rdb, cfg.Redis.KeyPrefix))
	if err != nil {
		return sum, fmt.Errorf("rebuild dead-letter marks: %w", err)
	}
	log.Info("dead-letter marks rebuilt", zap.Int("dead_letters_read", dead))
	if toLatest {
		if err := commitOffsets(ctx, cfg, plan); err != nil {
			return sum, err
		}
	}
	if err := finishReplay(ctx, m, cfg, names, sum.Before+sum.Events+sum.Skipped); err != nil {
		return sum, err
	}
	sum.Duration = time.Since(start)
	return sum, nil
}

// selectProjections keeps only the named projections (all enabled ones when none are named).
func selectProjections(cfg projections.Config, names []string) (projections.Config, error) {
	if len(names) == 0 {
		return cfg, nil
	}
	enabled := projections.EnabledNames(cfg)
	for _, n := range names {
		if !slices.Contains(enabled, n) {
			return cfg, fmt.Errorf("--projections: %q is not an enabled projection (enabled: %s)", n, strings.Join(enabled, ","))
		}
	}
	out := cfg
	for _, s := range projections.All() {
		s.SetEnabled(&out, slices.Contains(names, s.Name))
	}
	return out, nil
}
