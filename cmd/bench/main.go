// Command bench measures projector on this machine with a real redis-server
// (or valkey-server, with replicas or an append-only file when asked) and a
// real Apache Kafka broker on loopback: it loads a generated log,
// measures the consumer binary's throughput and CPU per event (and Redis's)
// on the backlog, the replayer's throughput, the event-to-visible latency,
// CPU per event and batch sizes at two steady rates, the same for the peer
// (internal/testing/bench/peer: a pipelined at-least-once consumer, run as this
// command's "peer" subcommand), and the naive one-command-per-round-trip
// baseline on the same log. Its last line is the summary (bench.ParseLine
// reads it):
//
//	bench: consumer=<n> ev/s naive=<n> ev/s ratio=<x> redis_cpu=<us>/ev consumer_cpu=<us>/ev replay=<n> ev/s p50=<ms>ms p99=<ms>ms peer=<n> ev/s live_redis_ratio=<x> backlog_redis_ratio=<x> backlog_consumer_ratio=<x> backlog_speedup=<x> replay_ratio=<x> p99_20k=<ms>ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"projector/internal/testing/bench"
	"projector/internal/testing/bench/peer"
	"projector/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 0 && args[0] == "peer" {
		return peer.Main(ctx, os.Environ(), stderr)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := bench.Config{Log: stderr}
	fs.IntVar(&cfg.Load.Events, "events", 2_000_000, "records loaded into Kafka (generator mix: duplicates and poison included)")
	fs.IntVar(&cfg.Load.Users, "users", 10_000, "distinct users")
	fs.IntVar(&cfg.Load.Products, "products", 2_000, "distinct products")
	fs.DurationVar(&cfg.Load.Span, "span", time.Hour, "event times spread over this span before now")
	fs.IntVar(&cfg.Partitions, "partitions", 4, "partitions per topic")
	fs.IntVar(&cfg.Redis.Masters, "cluster", 0, "run a Redis Cluster with this many masters (0: standalone)")
	fs.IntVar(&cfg.Redis.Replicas, "replicas", 0, "replicas of the standalone server (REPLICAOF, synced before the run)")
	fs.BoolVar(&cfg.Redis.Sentinel, "sentinel", false, "three Sentinels monitor the standalone server; the consumer, replayer and peer reach it through them (redis.mode sentinel)")
	server := fs.String("server", "redis", "server of the measured deployment: redis (redis-server on PATH), valkey (the test environment's valkey-server) or a path")
	fs.StringVar(&cfg.Redis.AOF, "aof", "", "append-only file on every server with this appendfsync: everysec or always (empty: off)")
	batch := fs.Int("batch", 0, "consumer batch.max_events (0: the consumer's default)")
	redisArgs := fs.String("redis-args", "", "extra redis-server arguments, space-separated (e.g. '--hash-max-listpack-entries 16')")
	replayBatch := fs.Int("replay-batch", 0, "the replayer's --batch (0: its default)")
	replayPar := fs.String("replay-parallel", "", "run the replay once per value of the replayer's --parallel, comma-separated (e.g. 1,2,4)")
	fs.IntVar(&cfg.ReplayRounds, "replay-rounds", 1, "rounds of -replay-parallel runs (interleaved)")
	off := fs.String("disable", "", "projections to switch off, comma-separated")
	extra := fs.String("env", "", "extra environment of the consumer and replayer, comma-separated K=V (e.g. GOGC=400)")
	fs.IntVar(&cfg.NaiveEvents, "naive-events", 30_000, "records the naive baseline consumes (0: skip it)")
	fs.IntVar(&cfg.Latency.Rate, "latency-rate", 10_000, "events per second of the latency phase (0: skip it)")
	fs.IntVar(&cfg.HighRate, "latency-rate-high", 20_000, "events per second of the second steady-rate phase (0: skip it)")
	fs.DurationVar(&cfg.Latency.Duration, "latency-duration", 20*time.Second, "length of each steady-rate phase")
	fs.IntVar(&cfg.LiveRounds, "live-rounds", 1, "rounds of both consumers' steady-rate phases, alternating (the summary takes medians over them)")
	skipPeer := fs.Bool("skip-peer", false, "leave out the peer (the pipelined at-least-once consumer)")
	fs.BoolVar(&cfg.SkipReplay, "skip-replay", false, "leave out the replay phase")
	fs.BoolVar(&cfg.SkipBrokerShares, "skip-broker-shares", false, "leave out the broker-share phase (the broker's CPU and fetch requests with the load generator alone and with each reader of the log, the Java console consumer among them)")
	fs.IntVar(&cfg.ProfileSeconds, "profile", 0, "take CPU profiles of the consumer and the peer for this many seconds, of the backlog and of each live phase (saved in -dir as <name>.pprof, <name>-live<rate>.pprof), and of the whole replay (replayer.pprof)")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for servers, binaries, logs and profiles (default: a new temporary one)")
	fs.StringVar(&cfg.Repo, "repo", ".", "the projector repository whose consumer and replayer are measured")
	fs.StringVar(&cfg.Servers, "servers", ".", "the projector repository whose scripts/testenv start Kafka and whose .testenv holds the servers")
	showVersion := fs.Bool("version", false, version.Usage)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("bench"))
		return 0
	}
	if cfg.Load.Events < 1 || cfg.Load.Users < 1 || cfg.Load.Products < 2 || cfg.Partitions < 1 || cfg.LiveRounds < 1 {
		fmt.Fprintln(stderr, "bench: -events, -users, -partitions, -live-rounds must be at least 1 and -products at least 2")
		return 2
	}
	if err := checkRedis(cfg.Redis); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	var err error
	if cfg.Redis.Server, err = bench.ServerBinary(*server, cfg.Servers); err != nil {
		fmt.Fprintln(stderr, "bench: -server:", err)
		return 2
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "projector-bench-")
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		cfg.Dir = d
	}
	cfg.Load.End = time.Now()
	cfg.Latency.Warmup = 2 * time.Second
	cfg.Latency.Users, cfg.Latency.Products = cfg.Load.Users, cfg.Load.Products
	if *batch > 0 {
		cfg.ConsumerEnv = append(cfg.ConsumerEnv, fmt.Sprintf("PROJECTOR_BATCH_MAX_EVENTS=%d", *batch))
	}
	cfg.Redis.Args = strings.Fields(*redisArgs)
	if *replayBatch > 0 {
		cfg.ReplayArgs = []string{fmt.Sprintf("--batch=%d", *replayBatch)}
	}
	for _, v := range strings.Split(*replayPar, ",") {
		if v = strings.TrimSpace(v); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				fmt.Fprintf(stderr, "bench: -replay-parallel: %q is not a positive number\n", v)
				return 2
			}
			cfg.ReplayParallel = append(cfg.ReplayParallel, n)
		}
	}
	for _, p := range strings.Split(*off, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.ConsumerEnv = append(cfg.ConsumerEnv, "PROJECTOR_PROJECTIONS_"+strings.ToUpper(p)+"_ENABLED=false")
		}
	}
	for _, kv := range strings.Split(*extra, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			cfg.ConsumerEnv = append(cfg.ConsumerEnv, kv)
		}
	}
	if !*skipPeer {
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(stderr, "bench: find this executable for the peer:", err)
			return 1
		}
		cfg.PeerCommand = []string{self, "peer"}
	}
	fmt.Fprintf(stderr, "bench: files in %s\n", cfg.Dir)
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	printCommands(stdout, "consumer", res.Consumer)
	if !*skipPeer {
		printCommands(stdout, "peer", res.Peer)
	}
	printLive(stdout, "consumer", res.Live)
	printLive(stdout, "peer", res.PeerLive)
	printShares(stdout, res)
	for i, m := range res.Machine {
		fmt.Fprintf(stdout, "%v (%s)\n", m, [2]string{"start", "end"}[i])
	}
	fmt.Fprintln(stdout, res.Line())
	return 0
}

// printShares prints the broker-share phase: per rate and reader the
// broker's CPU per event, what the reader adds to the load generator's
// alone, and the fetch requests per second; then each consumer's whole live
// cost per event (Redis + its own CPU + the broker CPU it causes).
func printShares(w io.Writer, res bench.Result) {
	rates := map[int]bool{}
	for _, s := range res.Shares {
		fmt.Fprintf(w, "broker round %d, %d ev/s, %-8s: %6.2f us/ev (+%.2f caused), %5.0f fetch requests/s\n",
			s.Round, s.Rate, s.Reader, s.BrokerCPU, res.Caused(s), s.Fetches)
		rates[s.Rate] = true
	}
	for _, rate := range slices.Sorted(maps.Keys(rates)) {
		fmt.Fprintf(w, "broker caused at %d ev/s, median over rounds: consumer %.2f us/ev, peer %.2f us/ev, java %.2f us/ev\n",
			rate, res.BrokerCaused(bench.ReaderConsumer, rate), res.BrokerCaused(bench.ReaderPeer, rate), res.BrokerCaused(bench.ReaderJava, rate))
		fmt.Fprintf(w, "live total %d ev/s (redis + consumer + broker caused): consumer %.2f us/ev, peer %.2f us/ev\n",
			rate, res.LiveTotal(bench.ReaderConsumer, rate), res.LiveTotal(bench.ReaderPeer, rate))
	}
}

// checkRedis rejects flag values of the measured deployment that cannot run,
// naming the flag.
func checkRedis(o bench.RedisOptions) error {
	switch {
	case o.Masters < 0:
		return errors.New("-cluster must not be negative")
	case o.Replicas < 0:
		return errors.New("-replicas must not be negative")
	case o.Replicas > 0 && o.Masters > 0:
		return errors.New("-replicas works with a standalone server only (not with -cluster)")
	case o.Sentinel && o.Masters > 0:
		return errors.New("-sentinel works with a standalone server only (not with -cluster)")
	case o.AOF != "" && o.AOF != "everysec" && o.AOF != "always":
		return fmt.Errorf("-aof %q: want everysec or always", o.AOF)
	}
	return nil
}

// printLive prints the steady-rate phases of one consumer, and the Redis
// commands per event of its phases at each rate: calls per event of the
// first, then the microseconds per event of every round side by side (what
// grows from round to round).
func printLive(w io.Writer, name string, lives []bench.Live) {
	var rates []int
	byRate := map[int][]bench.Live{}
	for _, l := range lives {
		if byRate[l.Rate] == nil {
			rates = append(rates, l.Rate)
		}
		byRate[l.Rate] = append(byRate[l.Rate], l)
	}
	for _, rate := range rates {
		ls := byRate[rate]
		first := ls[0]
		fmt.Fprintf(w, "redis commandstats over the %s's live phases at %d ev/s (first: %.0f events, mean batch %.1f; us/ev per round):\n",
			name, rate, first.Events, first.MeanBatch)
		if first.Events <= 0 {
			continue
		}
		fmt.Fprintf(w, "  %-18s %10s", "command", "calls/ev")
		for i := range ls {
			fmt.Fprintf(w, " %9s", fmt.Sprintf("us/ev r%d", i+1))
		}
		fmt.Fprintln(w)
		for _, cmd := range bench.Busiest(first.Commands) {
			fmt.Fprintf(w, "  %-18s %10.3f", cmd, float64(first.Commands[cmd].Calls)/first.Events)
			for _, l := range ls {
				fmt.Fprintf(w, " %9.3f", float64(l.Commands[cmd].Usec)/max(l.Events, 1))
			}
			fmt.Fprintln(w)
		}
	}
	for _, l := range lives {
		fmt.Fprintf(w, "live %s %v\n", name, l)
	}
}

// printCommands prints a consumer's Redis commands per event over its
// backlog phase, busiest first.
func printCommands(w io.Writer, name string, th bench.Throughput) {
	n := float64(th.Total)
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "redis commandstats over the %s's backlog (%d events, %.0f script calls, %.3f per event, mean batch %.0f):\n",
		name, th.Total, th.ScriptCalls, th.ScriptCalls/n, th.MeanBatch)
	printCommandTable(w, th.Commands, n)
}

// printCommandTable prints commandstats per event over n events, busiest first.
func printCommandTable(w io.Writer, cmds map[string]bench.CommandStat, n float64) {
	if n <= 0 {
		return
	}
	fmt.Fprintf(w, "  %-18s %12s %10s %10s\n", "command", "calls", "calls/ev", "us/ev")
	for _, name := range bench.Busiest(cmds) {
		s := cmds[name]
		fmt.Fprintf(w, "  %-18s %12d %10.3f %10.3f\n", name, s.Calls, float64(s.Calls)/n, float64(s.Usec)/n)
	}
}
