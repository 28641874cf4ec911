package peer

import (
	"context"
	"errors"
	"fmt"
	"math"
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
// duplicates, poison, out-of-order events or history clears and spans ten
// minutes, where both must agree: the same keys, values, members and
// scores, and the same expiries, except two accepted differences. First,
// the peer's PEXPIREAT leaves a key the expiry of its last write, the
// script the latest one; a key whose events arrive out of time order (a
// global key, written by events of every partition; a user key, through
// the generator's times snapped to calendar boundaries) may expire earlier
// on the peer, never later, and by less than an hour here. Second, see
// staleRecent.
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
	stale := staleRecent(want, load(t, b.Addr(), projector.Addr(), "projector").Projections.RecentOrders.Keep)
	var diff []string
	for _, d := range refmodel.Compare(ctx, peer.Client(), want, refmodel.Options{}, time.Hour) {
		if !stale(d) {
			diff = append(diff, d)
		}
	}
	if len(diff) > 0 {
		t.Errorf("%d differences from projector's state, e.g.:\n%s", len(diff), strings.Join(diff[:min(len(diff), 20)], "\n"))
	}
	for _, d := range refmodel.Compare(ctx, peer.Client(), want, refmodel.Options{}, 0) {
		earlier := strings.Contains(d, ": expires at ") && strings.Contains(d, "(off by -")
		if !earlier && !stale(d) {
			t.Errorf("difference other than an earlier expiry or a stale recent order: %s", d)
		}
	}
	if n := keysMatching(t, ctx, peer.Client(), "px:*"); n != 0 {
		t.Errorf("the peer wrote %d bookkeeping keys, want none", n)
	}
}

// staleRecent reports the second accepted difference: an order the peer
// keeps in recent:{g} with a score below projector's newest order - keep.
// The peer trims by each event's own ts, so an older order of one partition
// applied after a newer one of another stays; projector trims by the newest
// ts ever applied, as the contract states. The generator snaps some times to
// the nearest hour, so a ten-minute log that straddles a half hour (the test
// started in the first ten minutes after one) holds orders 1 ms before one
// hour and at the next.
func staleRecent(want refmodel.State, keep time.Duration) func(diff string) bool {
	const key = "recent:{g}"
	newest := math.Inf(-1)
	for _, s := range want[key].ZSet {
		newest = max(newest, s)
	}
	cut := newest - float64(keep.Milliseconds())
	return func(d string) bool {
		var member string
		var score float64
		n, _ := fmt.Sscanf(d, "key "+key+": extra member %q (score %f)", &member, &score)
		return n == 2 && score < cut
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

// TestStaleRecent checks which recent:{g} differences staleRecent accepts.
func TestStaleRecent(t *testing.T) {
	want := refmodel.State{"recent:{g}": {Kind: refmodel.KindZSet, ZSet: map[string]float64{"a": 1796328000000}}}
	stale := staleRecent(want, time.Hour)
	for d, ok := range map[string]bool{
		`key recent:{g}: extra member "ev-16-2003" (score 1796324399999)`:  true,
		`key recent:{g}: extra member "ev-16-2004" (score 1796324400000)`:  false,
		`key best:{g}:2026-12-03: extra member "p1" (score 1796324399999)`: false,
		`key recent:{g}: missing member "ev-16-2005"`:                      false,
	} {
		if got := stale(d); got != ok {
			t.Errorf("stale(%s) = %v, want %v", d, got, ok)
		}
	}
}
