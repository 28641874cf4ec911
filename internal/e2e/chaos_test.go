package e2e

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"projector/internal/gen"
	"projector/internal/testing/testkafka"
	"projector/internal/testing/testredis"
)

// TestChaosStandalone and TestChaosCluster: three consumer processes in one
// group on a 3-broker Apache Kafka cluster, with Redis (AOF on) standalone or
// a 3-master Redis Cluster, while production goes on (about 45 s): 14 consumers killed
// with kill -9 at random moments and replaced, consumers added and removed
// (rebalances), one broker killed and restarted, Redis restarted, and Redis
// frozen for 10 seconds (SIGSTOP/SIGCONT). At the end every key equals the
// model and the dead-letter topic holds exactly the poison records, once each.
// On Valkey the run is shorter (half the crashes and events), to keep the suite's time.
// The two tests run in parallel with each other, after the package's other
// tests: each has its own brokers, servers and consumers, and most of their
// time is waiting (production at 150 ev/s, the pauses between actions), so
// running them side by side takes about half the suite's chaos time.
func TestChaosStandalone(t *testing.T) {
	t.Parallel()
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) { runChaos(t, "standalone", fl) })
}

func TestChaosCluster(t *testing.T) {
	t.Parallel()
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) { runChaos(t, "cluster", fl) })
}

func runChaos(t *testing.T, mode string, fl testredis.Flavor) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	kc := testkafka.StartCluster(t, 3)
	for _, topic := range topics {
		kc.CreateTopic(t, topic, 4, 3)
	}
	kc.CreateTopic(t, "shop.dlq", 1, 3)
	brokers := kc.Addrs()
	var nodes []*testredis.Server
	var rdb redis.UniversalClient
	if mode == "cluster" {
		c := testredis.StartCluster(t, 3, testredis.WithAOF(), testredis.WithFlavor(fl))
		nodes, rdb = c.Nodes(), c.Client()
	} else {
		s := testredis.StartStandalone(t, testredis.WithAOF(), testredis.WithFlavor(fl))
		nodes, rdb = []*testredis.Server{s}, s.Client()
	}
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr())
	}
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = seed
	gc.Start, gc.Span = start.Add(-36*time.Hour), 36*time.Hour
	log := gen.New(gc).Log(share(fl, envInt("E2E_EVENTS", 6500)))
	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + strings.Join(addrs, ","),
		"PROJECTOR_REDIS_MODE=" + mode,
		"PROJECTOR_BATCH_MAX_EVENTS=200",
		"PROJECTOR_LOG_LEVEL=warn",
		"PROJECTOR_HTTP_ADDR=127.0.0.1:0",
	}
	consumers := []*proc{startConsumer(t, env), startConsumer(t, env), startConsumer(t, env)}
	done := make(chan error, 1)
	go produce(ctx, brokers, log, 60, 400*time.Millisecond, done)

	actions := []string{"add", "remove", "add", "remove", "broker", "redis-restart", "redis-outage"}
	for range share(fl, envInt("E2E_CRASHES", 14)) {
		actions = append(actions, "kill")
	}
	rng.Shuffle(len(actions), func(i, j int) { actions[i], actions[j] = actions[j], actions[i] })
	for _, a := range actions {
		time.Sleep(time.Duration(1000+rng.IntN(2000)) * time.Millisecond)
		t.Logf("%s: %s (%d consumers)", time.Since(start).Round(time.Millisecond), a, len(consumers))
		switch i := rng.IntN(len(consumers)); a {
		case "kill":
			consumers[i].kill9(t)
			consumers[i] = startConsumer(t, env)
		case "add":
			consumers = append(consumers, startConsumer(t, env))
		case "remove": // never below two: replace one then
			if len(consumers) <= 2 {
				consumers = append(consumers, startConsumer(t, env))
			}
			consumers[i].term(t)
			consumers = append(consumers[:i], consumers[i+1:]...)
		case "broker":
			b := kc.Brokers()[rng.IntN(3)]
			b.Kill()
			time.Sleep(time.Second)
			b.Restart(t)
		case "redis-restart":
			n := nodes[rng.IntN(len(nodes))]
			n.Stop()
			time.Sleep(time.Second)
			n.Restart(t)
		case "redis-outage":
			for _, n := range nodes {
				n.Pause()
			}
			time.Sleep(10 * time.Second)
			for _, n := range nodes {
				n.Resume()
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitLeaders(t, brokers, append(topics, "shop.dlq"))
	if err := waitCaughtUp(brokers, "projector", topics, 3*time.Minute); err != nil {
		for _, c := range consumers {
			c.dumpStacks()
		}
		t.Fatal(err)
	}
	for _, c := range consumers {
		c.term(t)
	}
	checkModel(t, rdb, log, start)
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
	t.Fatalf("partitions of %v have no leader after 60s", topics)
}
