package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Config is one benchmark run.
type Config struct {
	// Repo is the projector repository the consumer and replayer binaries
	// are built from.
	Repo string
	// Servers is the repository whose scripts/testenv/kafka.sh and
	// .testenv start Kafka (default Repo): the benchmark's own, when Repo is
	// an older tree measured beside it.
	Servers string
	// Dir holds the servers' files, binaries and logs.
	Dir string
	// Load is the log produced before the consumer starts.
	Load LoadConfig
	// Partitions per topic.
	Partitions int
	// Redis is the servers the consumer writes to (standalone or cluster,
	// server binary, replicas, append-only file).
	Redis RedisOptions
	// ConsumerEnv are extra PROJECTOR_* settings of the consumer and replayer
	// (batch size, projections switched off).
	ConsumerEnv []string
	// NaiveEvents bounds the records the naive baseline consumes (0: skip it).
	NaiveEvents int
	// Latency is the steady-rate phases (Rate 0: skip them): Rate, then
	// HighRate when it is not 0.
	Latency  LatencyConfig
	HighRate int
	// PeerCommand runs the peer (internal/testing/bench/peer.Main): the executable
	// and its arguments. Empty leaves the peer out.
	PeerCommand []string
	// SkipReplay leaves out the replay phase.
	SkipReplay bool
	// ReplayArgs are extra command-line arguments of the replayer (e.g. --batch).
	ReplayArgs []string
	// LiveRounds is the number of rounds of steady-rate phases (at least 1):
	// after the first (projector's, then the peer's after the replay), each
	// round runs projector's phases, then the peer's, each consumer first
	// catching up with the traffic of the other's; the summary takes the
	// medians over the rounds.
	LiveRounds int
	// ReplayParallel, when set, runs the replay once per value with
	// --parallel=N, ReplayRounds times over (interleaved).
	ReplayParallel []int
	ReplayRounds   int
	// SkipBrokerShares leaves out the broker-share phase (brokerShares).
	SkipBrokerShares bool
	// ProfileSeconds > 0 takes CPU profiles of the consumer and the peer for
	// that long in the backlog (Dir/<name>.pprof) and in each live phase
	// (Dir/<name>-live<rate>.pprof), and of the whole replay (Dir/replayer.pprof).
	ProfileSeconds int
	// Log receives progress lines.
	Log io.Writer
}

// Result holds the figures of a run (rates in events per second, CPU in
// microseconds per event).
type Result struct {
	// Consumer and Peer are the backlog phases of projector's consumer and
	// of the peer.
	Consumer, Peer Throughput
	Naive          float64
	NaiveCmds      float64 // Redis commands (round trips) per event of the naive baseline
	Replay         float64
	// Live and PeerLive are the steady-rate phases (Latency.Rate, then
	// HighRate) of projector's consumer and of the peer.
	Live, PeerLive []Live
	// Shares are the broker-share phase's windows: at each steady rate, the
	// load generator alone, then with each reader of the log.
	Shares []BrokerShare
	// Machine is the machine's speed at the run's start and end.
	Machine [2]Calibration
}

// env is a run's servers and binaries.
type env struct {
	cfg   Config
	redis *Redis
	// calib is a plain redis-server (standalone, no persistence, no
	// replicas) that only the calibration uses, so that the calibration
	// lines of runs of every configuration compare.
	calib    *Redis
	kafka    *Kafka
	consumer string
	replayer string
	// round is the round of steady-rate phases running (Config.LiveRounds; 0 and 1: the first).
	round int
}

// logf prints a progress line.
func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.cfg.Log, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// Run starts the servers, loads the log and runs every phase.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return res, fmt.Errorf("bench dir: %w", err)
	}
	e := &env{cfg: cfg}
	var err error
	e.logf("building consumer and replayer")
	if e.consumer, err = Build(ctx, cfg.Repo, "./cmd/consumer", cfg.Dir); err != nil {
		return res, err
	}
	if e.replayer, err = Build(ctx, cfg.Repo, "./cmd/replayer", cfg.Dir); err != nil {
		return res, err
	}
	ro := cfg.Redis
	e.logf("starting %s (cluster masters: %d, replicas: %d, appendfsync: %q, Sentinels: %v), a redis-server for the calibration, and Apache Kafka",
		cmp.Or(ro.Server, "redis-server"), ro.Masters, ro.Replicas, ro.AOF, ro.Sentinel)
	e.redis, err = StartRedis(ctx, filepath.Join(cfg.Dir, "redis"), ro)
	defer e.redis.Stop()
	if err != nil {
		return res, err
	}
	e.calib, err = StartRedis(ctx, filepath.Join(cfg.Dir, "calibration"), RedisOptions{})
	defer e.calib.Stop()
	if err != nil {
		return res, err
	}
	if e.kafka, err = StartKafka(ctx, cmp.Or(cfg.Servers, cfg.Repo), cfg.Dir); err != nil {
		return res, err
	}
	defer e.kafka.Stop()
	if err := e.kafka.CreateTopics(ctx, cfg.Partitions, append(Topics, "shop.dlq")...); err != nil {
		return res, err
	}
	p, err := NewProducer([]string{e.kafka.Addr()}, 5*time.Millisecond)
	if err != nil {
		return res, err
	}
	defer p.Close()
	if res.Machine[0], err = Calibrate(ctx, e.calib); err != nil {
		return res, err
	}
	e.logf("%v (start)", res.Machine[0])
	t := time.Now()
	e.logf("producing %d events (%d users, %d products)", cfg.Load.Events, cfg.Load.Users, cfg.Load.Products)
	if err := Load(ctx, p, cfg.Load); err != nil {
		return res, err
	}
	e.logf("produced in %v", time.Since(t).Round(time.Millisecond))
	if err := e.phases(ctx, p, &res); err != nil {
		return res, err
	}
	if res.Machine[1], err = Calibrate(ctx, e.calib); err != nil {
		return res, err
	}
	e.logf("%v (end)", res.Machine[1])
	return res, nil
}
