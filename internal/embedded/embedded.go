// Package embedded runs projector with no outside services: an in-process
// Kafka-protocol broker (kfake), an in-process Redis (miniredis) and a
// generator of realistic shop events, so `go run ./cmd/consumer` shows the
// whole pipeline working.
package embedded

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"projector/internal/app"
	"projector/internal/config"
	"projector/internal/dashboard"
	"projector/internal/gen"
	"projector/internal/kafkaconn"
	"projector/internal/logsample"
	"projector/internal/obs"
)

// Options tune the demo.
type Options struct {
	// Rate is the number of generated events per second (0: as fast as possible).
	Rate int
	// Partitions per input topic.
	Partitions int
	// Out receives the banner and the progress lines.
	Out io.Writer
	// Terminal says Out is a terminal: progress lines are then bold.
	Terminal bool
	// PoisonDetails logs the generated poison records as a real deployment
	// does (the first of each reason in full as warnings, then summaries by
	// reason) instead of one short summary per interval.
	PoisonDetails bool
	// ReportEvery is the interval between progress lines.
	ReportEvery time.Duration
}

// poisonNote ends the consumer's summary of the generator's poison records.
const poisonNote = "generated on purpose; --demo-poison-details shows them"

// Run starts the in-process broker and Redis, points cfg at them, feeds the
// broker with generated events and runs the consumer until ctx ends. The
// banner comes first: log lines wait until it is printed. About 1% of the
// generated records are poison; the consumer summarizes them in one line
// per interval and logs each at debug level (opts.PoisonDetails: as in a
// real deployment).
func Run(ctx context.Context, cfg config.Config, opts Options, log *zap.Logger) error {
	hold := newHoldLog()
	defer hold.Release()
	log = hold.Logger(log)
	if opts.Partitions < 1 {
		opts.Partitions = 4
	}
	if opts.ReportEvery <= 0 {
		opts.ReportEvery = 5 * time.Second
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(opts.Partitions), cfg.Kafka.Topics...),
		kfake.SeedTopics(1, cfg.Kafka.DLQTopic))
	if err != nil {
		return fmt.Errorf("start in-process kafka: %w", err)
	}
	defer kc.Close()
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return fmt.Errorf("start in-process redis: %w", err)
	}
	defer mr.Close()
	cfg.Kafka.Brokers = kc.ListenAddrs()
	cfg.Redis.Addrs = []string{mr.Addr()}
	cfg.Redis.Mode = "standalone"

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := &status{}
	go produce(ctx, cfg, opts.Rate, st, log.Named("generator"))
	go keepTime(ctx, mr)
	metrics := make(chan *obs.Metrics, 1)
	httpAddr := make(chan string, 1)
	go report(ctx, opts, cfg, mr, st, metrics, httpAddr, hold.Release)
	rdb := app.NewRedis(cfg.Redis)
	defer rdb.Close()
	routes, mon := dashboard.New(dashboard.Options{RDB: rdb, Config: cfg, Kafka: kafkaconn.Plain(cfg.Kafka.Brokers).Client(5 * time.Second),
		Log: log.Named("api")})
	go mon.Run(ctx)
	note := poisonNote
	if opts.PoisonDetails {
		note = ""
	}
	return app.Run(ctx, cfg, log, app.Hooks{
		HTTPAddr:   func(a string) { httpAddr <- a },
		Metrics:    func(m *obs.Metrics) { metrics <- m },
		Routes:     routes,
		PoisonNote: note,
	})
}

// keepTime moves miniredis's clock with the wall clock so keys expire.
func keepTime(ctx context.Context, mr *miniredis.Miniredis) {
	last := time.Now()
	mr.SetTime(last)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			mr.SetTime(now)
			mr.FastForward(now.Sub(last))
			last = now
		}
	}
}

// produce publishes generated events at rate events/s until ctx ends.
func produce(ctx context.Context, cfg config.Config, rate int, st *status, log *zap.Logger) {
	gc := gen.DefaultConfig()
	gc.Seed = uint64(time.Now().UnixNano())
	gc.ViewsTopic, gc.ClicksTopic, gc.OrdersTopic = topicOr(cfg.Kafka.Topics, 0, gc.ViewsTopic), topicOr(cfg.Kafka.Topics, 1, gc.ClicksTopic), topicOr(cfg.Kafka.Topics, 2, gc.OrdersTopic)
	g := gen.New(gc)
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Kafka.Brokers...), Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond, BatchSize: 500}
	defer w.Close()
	const tick = 50 * time.Millisecond
	per := rate * int(tick) / int(time.Second)
	if rate <= 0 {
		per = 500
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	// A broker that refuses writes fails every tick: a few lines in full, then summaries.
	failed := logsample.New(log, "publish generated events", "publishing generated events failed",
		logsample.Options{Level: zapcore.WarnLevel})
	go failed.Run(ctx)
	defer failed.Flush()
	for {
		msgs := make([]kafka.Message, 0, per)
		now := time.Now()
		for range per {
			r := g.Next(now)
			msgs = append(msgs, kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			if ctx.Err() != nil {
				return
			}
			failed.Log("publish", zap.Error(err))
		} else {
			st.produced.Add(int64(len(msgs)))
		}
		if rate > 0 {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return
		}
	}
}

func topicOr(topics []string, i int, def string) string {
	if i < len(topics) {
		return topics[i]
	}
	return def
}
