package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/testing/naive"
	"projector/pkg/projections"
)

// replayedLine is the replayer's summary: "replayed N records in D (R ev/s): ...".
var replayedLine = regexp.MustCompile(`replayed (\d+) records in \S+ \((\d+) ev/s\)`)

// runReplay empties Redis and runs the replayer binary with args over the
// consumed log; it returns the replayer's own rate.
func (e *env) runReplay(ctx context.Context, args []string) (float64, error) {
	if err := e.redis.FlushAll(ctx); err != nil {
		return 0, err
	}
	e.logf("replay: FLUSHALL, running the replayer %v", args)
	logPath := filepath.Join(e.cfg.Dir, "replayer.log")
	if e.cfg.ProfileSeconds > 0 {
		args = append(slices.Clip(args), "--cpu-profile="+filepath.Join(e.cfg.Dir, "replayer.pprof"))
	}
	if err := e.redis.ResetStats(ctx); err != nil {
		return 0, err
	}
	redis0, err0 := e.redis.CPUSeconds(ctx)
	kafka0, kerr0 := e.kafka.CPUSeconds()
	p, err := Start(e.replayer, args, Env(e.kafka.Addr(), e.redis, "127.0.0.1:0", e.cfg.ConsumerEnv...), logPath)
	if err != nil {
		return 0, err
	}
	<-p.Done()
	redis1, err1 := e.redis.CPUSeconds(ctx)
	kafka1, kerr1 := e.kafka.CPUSeconds()
	if err := errors.Join(err0, kerr0, err1, kerr1); err != nil {
		return 0, fmt.Errorf("replay: read the servers' CPU: %w", err)
	}
	out, err := os.ReadFile(logPath)
	if err != nil {
		return 0, fmt.Errorf("read replayer output: %w", err)
	}
	m := replayedLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("replayer printed no summary; see %s", logPath)
	}
	rate, _ := strconv.ParseFloat(string(m[2]), 64)
	cpu, _ := p.CPUSeconds()
	n, _ := strconv.ParseFloat(string(m[1]), 64)
	e.logf("replay %v: %s records at %.0f ev/s, replayer CPU %.2f us/ev, redis %.2f us/ev, kafka broker %.2f us/ev, peak RSS %d MiB",
		args, m[1], rate, 1e6*cpu/max(n, 1), 1e6*(redis1-redis0)/max(n, 1), 1e6*(kafka1-kafka0)/max(n, 1), p.PeakRSS()>>20)
	cmds, err := e.redis.CommandStats(ctx)
	if err != nil {
		return 0, fmt.Errorf("replay: read commandstats: %w", err)
	}
	e.logf("replay %v: redis commands per record (calls, us): %s", args, TopCommands(cmds, n, 10))
	return rate, nil
}

// runReplays runs the replay phase: once with ReplayArgs, or, with
// ReplayParallel, ReplayRounds rounds of one run per value (interleaved);
// it returns the mean rate of the first value's runs.
func (e *env) runReplays(ctx context.Context) (float64, error) {
	if len(e.cfg.ReplayParallel) == 0 {
		return e.runReplay(ctx, e.cfg.ReplayArgs)
	}
	rates := make([][]string, len(e.cfg.ReplayParallel))
	var first float64
	rounds := max(e.cfg.ReplayRounds, 1)
	for range rounds {
		for i, n := range e.cfg.ReplayParallel {
			rate, err := e.runReplay(ctx, append(slices.Clip(e.cfg.ReplayArgs), fmt.Sprintf("--parallel=%d", n)))
			if err != nil {
				return 0, err
			}
			rates[i] = append(rates[i], strconv.FormatFloat(rate, 'f', 0, 64))
			if i == 0 {
				first += rate / float64(rounds)
			}
		}
	}
	parts := make([]string, len(rates))
	for i, n := range e.cfg.ReplayParallel {
		parts[i] = fmt.Sprintf("%d=%s", n, strings.Join(rates[i], ","))
	}
	e.logf("replay ev/s by --parallel: %s", strings.Join(parts, " "))
	return first, nil
}

// runNaive empties Redis and runs the naive baseline (in this process) over
// the first NaiveEvents records; it returns its rate and commands per event.
func (e *env) runNaive(ctx context.Context) (float64, float64, error) {
	if err := e.redis.FlushAll(ctx); err != nil {
		return 0, 0, err
	}
	var rdb redis.UniversalClient
	if e.redis.Cluster {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: e.redis.Addrs()})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: e.redis.Addrs()[0]})
	}
	defer rdb.Close()
	planner, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		return 0, 0, err
	}
	a := naive.New(rdb, planner, naive.Options{Window: 24 * time.Hour})
	limit := int64(min(e.cfg.NaiveEvents, e.cfg.Load.Events))
	e.logf("naive: consuming %d records one command per round trip", limit)
	var start time.Time
	var startCmds int64
	c, err := naive.Consume(ctx, a, naive.ConsumeOptions{Brokers: []string{e.kafka.Addr()}, GroupID: "naive", Topics: Topics,
		Limit: limit, Progress: func(n int64) {
			if n == 1 {
				start, startCmds = time.Now(), a.Commands
			}
		}})
	if err != nil {
		return 0, 0, fmt.Errorf("naive: %w", err)
	}
	el := time.Since(start)
	rate := float64(c.Records-1) / el.Seconds()
	cmds := float64(a.Commands-startCmds) / float64(max(c.Records-1, 1))
	e.logf("naive: %d records (%d applied, %d duplicates, %d poison) in %v: %.0f ev/s, %.1f commands per record",
		c.Records, c.Applied, c.Duplicates, c.Poison, el.Round(time.Millisecond), rate, cmds)
	return rate, cmds, nil
}
