// Package app wires a consumer process together: Redis client, planner,
// applier, Kafka consumer, metrics, health and the HTTP endpoints.
package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/config"
	"projector/internal/consumer"
	"projector/internal/coord"
	"projector/internal/fingerprint"
	"projector/internal/obs"
	"projector/internal/records"
	"projector/internal/redischeck"
	"projector/pkg/projections"
)

// Hooks lets callers (the embedded demo, tests) observe a running consumer.
type Hooks struct {
	// HTTPAddr receives the bound address of the HTTP endpoints.
	HTTPAddr func(addr string)
	// Metrics receives the metrics once created.
	Metrics func(m *obs.Metrics)
	// Routes are extra handlers served on http.addr (the embedded demo's
	// read API and dashboard).
	Routes []obs.Route
	// PoisonNote, when set, says why poison records are expected:
	// consumer.Options.PoisonNote.
	PoisonNote string
}

// Run runs one consumer until ctx ends; it returns nil after a clean shutdown.
func Run(ctx context.Context, cfg config.Config, log *zap.Logger, hooks Hooks) error {
	m := obs.NewMetrics()
	if hooks.Metrics != nil {
		hooks.Metrics(m)
	}
	health := obs.NewHealth(m)
	health.SetReady(false, "starting")
	addr, err := obs.Serve(ctx, cfg.HTTP.Addr, obs.NewHTTPHandler(m, health, hooks.Routes...), log.Named("http"))
	if err != nil {
		return fmt.Errorf("serve http on %s: %w", cfg.HTTP.Addr, err)
	}
	log.Info("http endpoints up", zap.String("addr", addr), zap.String("metrics", "/metrics"), zap.String("ready", "/readyz"))
	if hooks.HTTPAddr != nil {
		hooks.HTTPAddr(addr)
	}

	rdb := NewRedis(cfg.Redis)
	defer rdb.Close()
	TrackMaster(rdb, cfg.Redis, m.RedisMasterChanges, log.Named("redis"))
	planner, err := projections.NewPlanner(cfg.Projections, cfg.Location, cfg.Redis.KeyPrefix)
	if err != nil {
		return fmt.Errorf("build projections: %w", err)
	}
	dials := countDials(rdb)
	applier := apply.New(rdb, planner, apply.Options{Window: cfg.Idempotency.Window, Location: cfg.Location,
		KeyPrefix: cfg.Redis.KeyPrefix, Now: time.Now}, apply.Guards{GapCheck: true, Evidence: true, Sync: syncOf(cfg.Redis.Wait)})
	meta := apply.NewMeta(rdb, cfg.Redis.KeyPrefix, time.Now, true)
	// The in-process Redis of the embedded demo evicts nothing (and has no CONFIG).
	checkPolicy := PolicyCheck(cfg.Redis, rdb, m.EvictionPolicyAccepted, log)
	if err := WaitRedis(ctx, log, health, func(ctx context.Context) error {
		if !cfg.Embedded {
			if err := checkPolicy(ctx); err != nil {
				return err
			}
		}
		if err := applier.LoadScript(ctx); err != nil {
			return err
		}
		return checkWait(ctx, rdb, cfg.Redis.Wait, log)
	}); err != nil {
		return err
	}
	log.Info("projections enabled", zap.Strings("projections", planner.Enabled()), zap.String("redis_mode", cfg.Redis.Mode),
		zap.Strings("redis", cfg.Redis.Addrs), zap.String("time_zone", cfg.TimeZone))
	kc, err := connectKafka(ctx, cfg.Kafka, log)
	if err != nil {
		return err
	}
	defer kc.Close()

	c := consumer.New(consumer.Options{
		Brokers: cfg.Kafka.Brokers, Kafka: kc, GroupID: cfg.Kafka.GroupID, Topics: cfg.Kafka.Topics, DLQTopic: cfg.Kafka.DLQTopic,
		MaxRecordBytes: cfg.Kafka.MaxRecordBytes, MaxEvents: cfg.Batch.MaxEvents, MaxWait: cfg.Batch.MaxWait,
		Window: cfg.Idempotency.Window, Reconnects: dials.Load,
		MetaKey: projections.Keys{Prefix: cfg.Redis.KeyPrefix}.Meta(),
		Publish: func(ctx context.Context, ack string) error {
			return fingerprint.Publish(ctx, rdb, cfg.Redis.KeyPrefix, records.ProcessName(), fingerprint.Of(cfg), ack)
		},
		Withdraw: func(ctx context.Context) error {
			return fingerprint.Withdraw(ctx, rdb, cfg.Redis.KeyPrefix, records.ProcessName())
		},
		MetaInfo:   coord.Info(cfg.Kafka.GroupID, cfg.TimeZone, planner.Enabled()),
		PoisonNote: hooks.PoisonNote,
	}, applier, meta, records.NewDLQMarks(rdb, cfg.Redis.KeyPrefix), m, health, log.Named("consumer"))
	go consumer.MonitorLag(ctx, kc, cfg.Kafka.GroupID, c.Topics, m, log.Named("lag"))
	err = c.Run(ctx)
	health.SetReady(false, "stopping")
	return err
}

// WaitRedis runs f until it succeeds, backing off while Redis is
// unreachable or out of memory (readiness names which). It returns at once
// a refusal to start (*redischeck.EvictionError), a server that cannot do
// what the configuration asks (*config.KeyError) and, explained in one
// line, refused credentials or a failed TLS handshake.
func WaitRedis(ctx context.Context, log *zap.Logger, health *obs.Health, f func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		var (
			refusal *redischeck.EvictionError
			ke      *config.KeyError
		)
		if errors.As(err, &refusal) || errors.As(err, &ke) {
			return err
		}
		if permanent(err) {
			return redisSetupError(err)
		}
		reason := "redis unreachable: "
		if redischeck.OutOfMemory(err) {
			reason = "redis out of memory (OOM: maxmemory reached, writes refused): "
		}
		health.SetReady(false, reason+err.Error())
		log.Warn("redis not ready, retrying", zap.Error(err), zap.Duration("backoff", backoff))
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
