//go:build chaos

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/gen"
	"projector/internal/refmodel"
	"projector/internal/testkafka"
	"projector/internal/testredis"
	"projector/pkg/projections"
)

// TestChaosApacheKafka: three consumers in one group on a real Apache Kafka
// broker and a Redis with AOF on, while production goes on: consumers killed
// (-9) and stopped and replaced (rebalances), Redis frozen for 10 seconds
// (SIGSTOP/SIGCONT), Redis restarted, the broker restarted. At the end every
// key equals the model and the dead-letter topic holds exactly the poison records.
func TestChaosApacheKafka(t *testing.T) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	broker := testkafka.Start(t)
	for _, topic := range topics {
		broker.CreateTopic(t, topic, 4)
	}
	broker.CreateTopic(t, "shop.dlq", 1)
	brokers := broker.Addrs()
	rds := testredis.StartStandalone(t, testredis.WithAOF())
	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = testSeed(t)
	gc.Start, gc.Span = start.Add(-36*time.Hour), 36*time.Hour
	log := gen.New(gc).Log(envInt("E2E_EVENTS", 9000))
	third := len(log) / 3

	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + rds.Addr(),
		"PROJECTOR_BATCH_MAX_EVENTS=200",
		"PROJECTOR_LOG_LEVEL=warn",
		"PROJECTOR_HTTP_ADDR=127.0.0.1:0",
	}
	consumers := []*proc{startConsumer(t, env), startConsumer(t, env), startConsumer(t, env)}
	done := make(chan error, 1)

	// Part 1: consumers replaced while records flow; Redis frozen for 10 s.
	go produce(ctx, brokers, log[:third], 100, 200*time.Millisecond, done)
	time.Sleep(3 * time.Second)
	consumers[0].kill9(t)
	consumers[0] = startConsumer(t, env)
	time.Sleep(2 * time.Second)
	rds.Pause()
	time.Sleep(10 * time.Second)
	rds.Resume()
	consumers[1].term(t)
	consumers[1] = startConsumer(t, env)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Part 2: Redis restarted (AOF) and a consumer killed while records flow.
	go produce(ctx, brokers, log[third:2*third], 100, 200*time.Millisecond, done)
	time.Sleep(2 * time.Second)
	rds.Stop()
	time.Sleep(2 * time.Second)
	rds.Restart(t)
	consumers[2].kill9(t)
	consumers[2] = startConsumer(t, env)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Part 3: the broker restarted between two bursts of production.
	broker.Stop()
	time.Sleep(time.Second)
	broker.Restart(t)
	waitLeaders(t, brokers, append(topics, "shop.dlq"))
	produce(ctx, brokers, log[2*third:], 200, 100*time.Millisecond, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := waitCaughtUp(brokers, "projector", topics, 3*time.Minute); err != nil {
		for _, c := range consumers {
			c.dumpStacks()
		}
		t.Fatal(err)
	}
	for _, c := range consumers {
		c.term(t)
	}
	opts := refmodel.Options{Projections: projections.Defaults(), Location: time.UTC, Window: 24 * time.Hour, Now: start,
		Settle: time.Now().Add(5 * time.Second)}
	want := refmodel.Expected(opts, log)
	if diffs := refmodel.Compare(ctx, rds.Client(), want, opts, time.Second); len(diffs) > 0 {
		t.Errorf("%d differences after the chaos, first ones:\n%s", len(diffs), strings.Join(diffs[:min(len(diffs), 30)], "\n"))
	}
	checkDeadLetters(t, brokers, topics, "shop.dlq", log)
}

// waitLeaders waits until every partition of the topics has a leader.
func waitLeaders(t *testing.T, brokers, topics []string) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		meta, err := client.Metadata(context.Background(), &kafka.MetadataRequest{Topics: topics})
		ok := err == nil && len(meta.Topics) == len(topics)
		for _, tp := range meta.Topics {
			for _, p := range tp.Partitions {
				ok = ok && tp.Error == nil && p.Error == nil && p.Leader.Host != ""
			}
		}
		if ok {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("partitions of %v have no leader 60s after the broker restart", topics)
}
