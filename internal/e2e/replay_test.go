package e2e

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"projector/internal/gen"
	"projector/internal/testing/testkafka"
	"projector/internal/testing/testredis"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// get returns the status and body of an HTTP GET (0 on error).
func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRecoveryStandalone: Redis loses everything (FLUSHALL) twice at random
// moments while the consumer is busy and production goes on; the consumer
// stops and reports it, the replayer rebuilds, the consumer resumes by itself,
// and the end state equals the model.
func TestRecoveryStandalone(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		srv := testredis.StartStandalone(t, testredis.WithFlavor(fl))
		runRecovery(t, false, srv.Client(), []string{srv.Addr()}, "standalone", func(ctx context.Context) error {
			return srv.Client().FlushAll(ctx).Err()
		})
	})
}

// TestRecoveryCluster: the same on a 3-master Redis Cluster.
func TestRecoveryCluster(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		c := testredis.StartCluster(t, 3, testredis.WithFlavor(fl))
		runRecovery(t, false, c.Client(), c.Addrs(), "cluster", c.FlushAll)
	})
}

// TestRecoveryApacheKafka: the same with a real Apache Kafka broker, which the
// replayer reads the canonical log from.
func TestRecoveryApacheKafka(t *testing.T) {
	srv := testredis.StartStandalone(t)
	runRecovery(t, true, srv.Client(), []string{srv.Addr()}, "standalone", func(ctx context.Context) error {
		return srv.Client().FlushAll(ctx).Err()
	})
}

func runRecovery(t *testing.T, realKafka bool, rdb redis.UniversalClient, addrs []string, mode string, flushAll func(context.Context) error) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	var brokers []string
	if realKafka {
		b := testkafka.Start(t)
		for _, topic := range topics {
			b.CreateTopic(t, topic, 3)
		}
		b.CreateTopic(t, "shop.dlq", 1)
		brokers = b.Addrs()
	} else {
		brokers = startKafka(t, 3, topics, "shop.dlq")
	}
	log, rng, start := seededLog(t, 11)

	done := make(chan error, 1)
	go produce(ctx, brokers, log, 200, 60*time.Millisecond, done)
	httpAddr := freeAddr(t)
	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + strings.Join(addrs, ","),
		"PROJECTOR_REDIS_MODE=" + mode,
		"PROJECTOR_BATCH_MAX_EVENTS=300",
		"PROJECTOR_LOG_LEVEL=warn",
	}
	c := startConsumer(t, append(env, "PROJECTOR_HTTP_ADDR="+httpAddr))
	// Before the group commits, a missing meta hash is a first start, not a loss.
	waitCommitted(t, brokers, "projector", topics)
	for loss := 0; loss < 2; loss++ {
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		if err := flushAll(ctx); err != nil {
			t.Fatal(err)
		}
		waitLossReported(t, httpAddr)
		rp := exec.Command(replayerBin)
		rp.Env = cleanEnv(env)
		out, err := rp.CombinedOutput()
		if err != nil {
			t.Fatalf("replayer: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "replayed ") {
			t.Errorf("replayer printed no summary:\n%s", out)
		}
		t.Logf("loss %d, replayer: %s", loss+1, tail(string(out), 300))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		c.dumpStacks()
		t.Fatal(err)
	}
	// The consumer looks at px:meta:{g} every 3 s; the flag must be down within one look.
	if !waitMetric(httpAddr, "projector_redis_data_lost 0", 8*time.Second) {
		t.Errorf("data-lost metric not reset within 8 s after the replay")
	}
	c.term(t)

	checkModel(t, rdb, log, start)
	checkDeadLetters(t, brokers, topics, "shop.dlq", log)
	// Nothing is lost now: a replayer run refuses.
	rp := exec.Command(replayerBin)
	rp.Env = cleanEnv(env)
	if out, err := rp.CombinedOutput(); err == nil || !strings.Contains(string(out), "did not lose") {
		t.Errorf("replayer on intact Redis: err %v, output %s", err, out)
	}
}

// seededLog generates E2E_EVENTS records (10,000) with event times in the
// 36 hours before now, from the test's seed, and returns them, a random
// source from the same seed (stream picks its sequence) and the start time.
func seededLog(t *testing.T, stream uint64) ([]gen.Record, *rand.Rand, time.Time) {
	seed := testSeed(t)
	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = seed
	gc.Start, gc.Span = start.Add(-36*time.Hour), 36*time.Hour
	return gen.New(gc).Log(envInt("E2E_EVENTS", 10000)), rand.New(rand.NewPCG(seed, stream)), start
}

// waitCommitted waits until the group has committed an offset.
func waitCommitted(t *testing.T, brokers []string, group string, topics []string) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, parts, err := endOffsets(context.Background(), client, topics)
		if err != nil {
			continue
		}
		res, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
		if err != nil {
			continue
		}
		for _, ps := range res.Topics {
			for _, p := range ps {
				if p.CommittedOffset > 0 {
					return
				}
			}
		}
	}
	t.Fatalf("group %s committed nothing within 60s", group)
}

// waitMetric polls /metrics until it contains line or timeout passes.
func waitMetric(httpAddr, line string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		if _, metrics := get("http://" + httpAddr + "/metrics"); strings.Contains(metrics, line) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// waitLossReported waits until the consumer says Redis lost its data.
func waitLossReported(t *testing.T, httpAddr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, reason := get("http://" + httpAddr + "/readyz")
		_, metrics := get("http://" + httpAddr + "/metrics")
		if code == http.StatusServiceUnavailable && strings.Contains(reason, "lost") && strings.Contains(metrics, "projector_redis_data_lost 1") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer did not report the data loss: readyz %d %q", code, reason)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
