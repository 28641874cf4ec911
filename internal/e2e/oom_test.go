package e2e

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/testing/testredis"
)

// TestOOMRetriedWithoutLoss: Redis with a small maxmemory and the
// noeviction policy runs out of memory while the consumer applies a
// generated log from a real Apache Kafka broker and production goes on. The
// consumer is not ready and /readyz names the OOM; it commits nothing it
// could not write, so with production done it is still behind. Once
// maxmemory is raised (CONFIG SET maxmemory 0) it catches up by itself, and
// every key equals the reference model: nothing lost, nothing counted twice.
func TestOOMRetriedWithoutLoss(t *testing.T) { flavors(t, testOOMRetriedWithoutLoss) }

func testOOMRetriedWithoutLoss(t *testing.T, fl testredis.Flavor) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	brokers := startApacheKafka(t, 3, topics, "shop.dlq")
	start := time.Now()
	log := generate(t, start, 36*time.Hour, envInt("E2E_EVENTS", 10000))
	// An empty server uses about 1 MB; the projections of the log
	// about 330 bytes per record: the limit is reached part-way through.
	maxmemory := os.Getenv("E2E_OOM_MAXMEMORY")
	if maxmemory == "" {
		maxmemory = strconv.Itoa(1<<20 + 150*len(log))
	}
	srv := testredis.StartStandalone(t, testredis.WithFlavor(fl), testredis.WithArgs("--maxmemory", maxmemory, "--maxmemory-policy", "noeviction"))

	done := make(chan error, 1)
	go produce(ctx, brokers, log, 200, 50*time.Millisecond, done)
	httpAddr := freeAddr(t)
	c := startConsumer(t, []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + srv.Addr(),
		"PROJECTOR_BATCH_MAX_EVENTS=300",
		"PROJECTOR_LOG_LEVEL=warn",
		"PROJECTOR_HTTP_ADDR=" + httpAddr,
	})
	readyz := "http://" + httpAddr + "/readyz"
	reason := waitHTTP(t, readyz, http.StatusServiceUnavailable, "OOM")
	if !strings.Contains(reason, "maxmemory") {
		t.Errorf("/readyz says %q: want the OOM and maxmemory named", reason)
	}
	t.Logf("out of memory: /readyz %q", reason)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Stuck: nothing it could not write is committed.
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	if lag, err := groupLag(ctx, client, "projector", topics); lag <= 0 {
		t.Fatalf("lag %d (%v) with Redis out of memory: the consumer committed records it could not apply", lag, err)
	}
	waitHTTP(t, readyz, http.StatusServiceUnavailable, "OOM")

	if err := srv.Client().ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := waitCaughtUp(brokers, "projector", topics, 3*time.Minute); err != nil {
		c.dumpStacks()
		t.Fatal(err)
	}
	waitHTTP(t, readyz, http.StatusOK, "ready")
	c.term(t)
	if mem, err := srv.Client().Info(ctx, "memory").Result(); err == nil {
		t.Logf("redis memory after the run: %s", field(mem, "used_memory_human"))
	}
	checkModel(t, srv.Client(), log, start)
	checkDeadLetters(t, brokers, topics, "shop.dlq", log)
}

// field returns the value of name in an INFO reply.
func field(info, name string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
	}
	return ""
}
