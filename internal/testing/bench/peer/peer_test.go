package peer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/app"
	"projector/internal/config"
	"projector/internal/gen"
	"projector/internal/kafkalag"
	"projector/internal/testing/refmodel"
	"projector/internal/testing/testkafka"
	"projector/internal/testing/testredis"
)

var topics = []string{"shop.views", "shop.clicks", "shop.orders"}

// TestPeerWritesWhatProjectorWrites runs projector's consumer (internal/app)
// and the peer on the same log in real Apache Kafka, each into its own real
// redis-server, and compares every projection key of both. The log has no
// duplicates and no poison, so the peer, which applies the same writes by the
// same rules without the guards, must leave exactly the same keys, values,
// members, scores and expiries.
func TestPeerWritesWhatProjectorWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := testkafka.Start(t)
	for _, tp := range append(topics, "shop.dlq") {
		b.CreateTopic(t, tp, 4)
	}
	gc := gen.DefaultConfig()
	gc.Seed, gc.Users, gc.Products = 16, 40, 60
	gc.DupRate, gc.PoisonRate, gc.OutOfOrderRate, gc.HistoryEventRate = 0, 0, 0, 0
	gc.Span = 10 * time.Minute
	gc.Start = time.Now().Add(-gc.Span)
	log := gen.New(gc).Log(3000)
	produce(t, ctx, b.Addrs(), log)

	projector, peer := testredis.StartStandalone(t), testredis.StartStandalone(t)
	runs := []struct {
		group string
		redis *testredis.Server
	}{{"projector", projector}, {"peer", peer}}
	done := make(chan error, len(runs))
	runCtx, stop := context.WithCancel(ctx)
	var m *Metrics
	for _, r := range runs {
		cfg := load(t, b.Addr(), r.redis.Addr(), r.group)
		if r.group == "projector" {
			go func() { done <- app.Run(runCtx, cfg, zap.NewNop(), app.Hooks{}) }()
			continue
		}
		m = NewMetrics()
		p, err := New(cfg, app.NewRedis(cfg.Redis), m, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- p.Run(runCtx) }()
	}
	for _, r := range runs {
		waitCommitted(t, ctx, b.Addr(), r.group)
	}
	stop()
	for range runs {
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("consumer: %v", err)
		}
	}
	if got := counter(t, m, "peer_events_total"); got != float64(len(log)) {
		t.Errorf("peer_events_total = %v, want %d", got, len(log))
	}
	want, err := refmodel.Dump(ctx, projector.Client(), refmodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 100 {
		t.Fatalf("projector wrote only %d keys", len(want))
	}
	if diff := refmodel.Compare(ctx, peer.Client(), want, refmodel.Options{}, 0); len(diff) > 0 {
		t.Errorf("%d differences from projector's state, e.g.:\n%s", len(diff), strings.Join(diff[:min(len(diff), 20)], "\n"))
	}
	if got := counter(t, m, "peer_calls_total"); got < float64(gc.Users) {
		t.Errorf("peer_calls_total = %v: the writes did not go by script calls", got)
	}
	if n := keysMatching(t, ctx, peer.Client(), "px:*"); n != 0 {
		t.Errorf("the peer wrote %d bookkeeping keys, want none", n)
	}
}

// load is the configuration both consumers read from PROJECTOR_* variables.
func load(t *testing.T, brokers, addr, group string) config.Config {
	t.Helper()
	cfg, err := config.Load(nil, []string{"PROJECTOR_KAFKA_BROKERS=" + brokers, "PROJECTOR_REDIS_ADDRS=" + addr,
		"PROJECTOR_KAFKA_GROUP_ID=" + group, "PROJECTOR_HTTP_ADDR=127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// produce publishes log keyed by user and waits for the acknowledgements.
func produce(t *testing.T, ctx context.Context, brokers []string, log []gen.Record) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond,
		BatchSize: 500, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	msgs := make([]kafka.Message, 0, len(log))
	for _, r := range log {
		msgs = append(msgs, kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// waitCommitted waits until group has committed every record of the topics.
func waitCommitted(t *testing.T, ctx context.Context, broker, group string) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(broker), Timeout: 10 * time.Second}
	for {
		ps, err := kafkalag.Measure(ctx, client, group, topics)
		if err == nil && len(ps) == 12 && kafkalag.Total(ps) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s: lag not 0 in time (%v, %d partitions)", group, err, len(ps))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// counter reads a counter of m by name.
func counter(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// keysMatching counts the keys of pattern.
func keysMatching(t *testing.T, ctx context.Context, rdb *redis.Client, pattern string) int {
	t.Helper()
	keys, err := rdb.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}
