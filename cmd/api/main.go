// Command api serves the read side of projector: the JSON read API under
// /api/, the live dashboard at /, and /metrics, /healthz and /readyz. It
// reads the consumer's configuration (same file, PROJECTOR_* variables and
// flags), so redis.*, time_zone and projections.* agree with what the
// consumers write; kafka.brokers and kafka.group_id select the lag shown.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"projector/internal/app"
	"projector/internal/config"
	"projector/internal/dashboard"
	"projector/internal/kafkaconn"
	"projector/internal/obs"
	"projector/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run is main with its inputs passed in; it returns the exit code: 0 after
// ctx ends or --version, 2 for bad configuration, a master name no Sentinel knows or a
// Redis server that evicts keys (redis.allow_eviction unset), 1 when the
// HTTP server cannot start or Redis refuses the credentials. Readiness
// waits for Redis and its policy check.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	if version.Asked(args) {
		fmt.Fprintln(stdout, version.String("api"))
		return 0
	}
	fs := pflag.NewFlagSet("api", pflag.ContinueOnError)
	fs.Bool("version", false, version.Usage)
	cfg, log, code := app.Setup(fs, args, environ, stderr)
	if log == nil {
		return code
	}
	defer func() { _ = log.Sync() }()
	if cfg.Embedded {
		// Nothing configured: read a local Redis, measure no lag.
		cfg.Redis.Addrs = []string{config.DefaultRedisAddr}
	}
	rdb := app.NewReadRedis(cfg.Redis)
	defer rdb.Close()
	replica := app.NewReplicaRedis(cfg.Redis)
	if replica != nil {
		defer replica.Close()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ready := prometheus.NewGauge(prometheus.GaugeOpts{Name: "projector_ready", Help: "1 while the process reports ready, else 0."})
	evictionAccepted := obs.NewEvictionPolicyAccepted()
	masterChanges := obs.NewRedisMasterChanges()
	reg.MustRegister(ready, evictionAccepted, masterChanges)
	app.TrackMaster(rdb, cfg.Redis, masterChanges, log.Named("redis"))
	health := obs.NewHealth(nil)
	health.SetReady(false, "starting")

	kc, err := kafkaClient(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	routes, mon := dashboard.New(dashboard.Options{RDB: rdb, Replica: replica, Config: cfg, Kafka: kc,
		Registry: reg, Log: log.Named("api")})
	go mon.Run(ctx)
	addr, err := obs.Serve(ctx, cfg.HTTP.Addr, obs.NewMux(reg, health, routes...), log.Named("http"))
	if err != nil {
		log.Error("cannot serve", zap.Error(err))
		return 1
	}
	fmt.Fprintf(stdout, "projector read API and dashboard on http://%s/ (API under /api/, metrics /metrics)\n", addr)
	log.Info("read API up", zap.String("addr", addr), zap.String("redis_mode", cfg.Redis.Mode), zap.Strings("redis", cfg.Redis.Addrs),
		zap.String("read_from", cfg.Redis.ReadFrom), zap.String("time_zone", cfg.TimeZone))
	err = app.WaitRedis(ctx, log, health, app.PolicyCheck(cfg.Redis, rdb, evictionAccepted, log))
	var ke *config.KeyError
	switch {
	case app.ExitRefused(log, err):
		return 2
	case errors.As(err, &ke):
		fmt.Fprintln(stderr, ke.Error())
		return 2
	case err != nil && ctx.Err() == nil:
		log.Error("cannot use redis", zap.Error(err))
		return 1
	}
	watchRedis(ctx, rdb, replica, health, ready, log)
	return 0
}

// kafkaClient measures lag against kafka.brokers (with kafka.sasl and
// kafka.tls) unless nothing is configured.
func kafkaClient(cfg config.Config) (*kafka.Client, error) {
	if cfg.Embedded {
		return nil, nil
	}
	conn, err := kafkaconn.New(cfg.Kafka)
	if err != nil {
		return nil, fmt.Errorf("config: kafka: %w", err)
	}
	return conn.Client(5 * time.Second), nil
}

// watchRedis keeps readiness equal to "Redis answers PING" until ctx ends:
// the master, or with redis.read_from replicas (replica not nil) the
// replica reads go to, so that reads are served while the master is away.
func watchRedis(ctx context.Context, rdb, replica redis.UniversalClient, health *obs.Health, ready prometheus.Gauge, log *zap.Logger) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	was := false
	for {
		err := ping(ctx, rdb)
		if err != nil && replica != nil && ping(ctx, replica) == nil {
			err = nil
		}
		ok := err == nil
		if ok {
			health.SetReady(true, "")
			ready.Set(1)
		} else if ctx.Err() == nil {
			health.SetReady(false, "redis unreachable: "+err.Error())
			ready.Set(0)
		}
		if ok != was && ctx.Err() == nil {
			log.Info("readiness changed", zap.Bool("ready", ok), zap.Error(err))
			was = ok
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ping sends PING through rdb, waiting at most 2 s for the answer.
func ping(ctx context.Context, rdb redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return rdb.Ping(ctx).Err()
}
