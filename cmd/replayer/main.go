// Command replayer rebuilds projector's Redis projections from the event log
// in Kafka after Redis lost its data, then hands over to the consumers.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"projector/internal/app"
	"projector/internal/config"
	"projector/internal/obs"
	"projector/internal/replay"
	"projector/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run returns the exit code: 0 done (or --version), 2 bad configuration or
// flags, a master name no Sentinel knows or a Redis server that evicts keys
// (redis.allow_eviction unset), 1 refused or failed.
func run(args, environ []string, stdout, stderr io.Writer) int {
	if version.Asked(args) {
		fmt.Fprintln(stdout, version.String("replayer"))
		return 0
	}
	// First of all, so that a SIGTERM during start-up is a clean stop too.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app.TuneGC(app.ReplayerMemoryLimit)
	fs := pflag.NewFlagSet("replayer", pflag.ContinueOnError)
	projs := fs.StringSlice("projections", nil, "projections to rebuild (default: all enabled ones)")
	wipe := fs.Bool("wipe", false, "delete the selected projections' keys first (needs --yes)")
	yes := fs.Bool("yes", false, "confirm --wipe")
	dry := fs.Bool("dry-run", false, "only say what would be read and written")
	to := fs.String("to", "committed", "replay up to the group's committed offsets, or to the 'latest' offsets (then committed for the group)")
	partial := fs.Bool("allow-partial", false, "rebuild even though Kafka no longer holds the beginning of the log")
	batch := fs.Int("batch", 0, "records applied per batch (default 50000 for a replay after data loss, 10000 with --projections)")
	maxRate := fs.Int("max-rate", 0, "replay at most this many records per second (0: no limit), leaving Redis room for the running consumers; never limits a rebuild's handover")
	parallel := fs.Int("parallel", replay.DefaultParallel, "lanes of partitions whose batches a replay after data loss applies concurrently")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	fs.Bool("version", false, version.Usage)
	cfg, log, code := app.Setup(fs, args, environ, stderr)
	if log == nil {
		return code
	}
	if *to != "committed" && *to != "latest" {
		fmt.Fprintf(stderr, "config: --to: must be committed or latest (got %q)\n", *to)
		return 2
	}
	if *parallel < 1 {
		fmt.Fprintf(stderr, "config: --parallel: must be at least 1 (got %d)\n", *parallel)
		return 2
	}
	if *maxRate < 0 {
		fmt.Fprintf(stderr, "config: --max-rate: must be 0 (no limit) or more (got %d)\n", *maxRate)
		return 2
	}
	if *wipe && !*yes && !*dry {
		fmt.Fprintln(stderr, "config: --wipe: deletes keys; confirm with --yes")
		return 2
	}
	if cfg.Embedded {
		fmt.Fprintln(stderr, "config: kafka.brokers: the replayer needs the brokers and Redis of the consumers (no embedded mode)")
		return 2
	}
	defer func() { _ = log.Sync() }()
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "config: --cpu-profile:", err)
			return 2
		}
		defer stopProfile()
	}
	if err := app.CheckSentinels(ctx, cfg.Redis); err != nil {
		var ke *config.KeyError
		if errors.As(err, &ke) {
			fmt.Fprintln(stderr, ke.Error())
			return 2
		}
		log.Error("replay failed", zap.Error(err))
		fmt.Fprintln(stderr, "replayer:", err)
		return 1
	}
	sum, err := replay.Run(ctx, cfg, replay.Options{Projections: *projs, ToLatest: *to == "latest", AllowPartial: *partial, Wipe: *wipe,
		DryRun: *dry, BatchSize: *batch, MaxRate: *maxRate, Parallel: *parallel, Progress: os.Stdout, Terminal: obs.IsTerminal(os.Stdout)}, log)
	if app.ExitRefused(log, err) {
		return 2
	}
	if err != nil {
		log.Error("replay failed", zap.Error(err))
		fmt.Fprintln(stderr, "replayer:", err)
		return 1
	}
	if !*dry {
		fmt.Fprintln(stdout, sum.String())
	}
	return 0
}

// startCPUProfile starts a CPU profile written to path; the returned
// function stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
