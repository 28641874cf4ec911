package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"projector/internal/gen"
	"projector/internal/testing/refmodel"
	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// scenario is one randomized end-to-end run.
type scenario struct {
	flavor    testredis.Flavor
	cluster   bool
	prefix    string
	zone      string
	events    int
	crashes   int
	seed      uint64
	batchSize int
}

// forFlavors runs f as a subtest on each server implementation (Debian's
// Redis and Valkey).
func forFlavors(t *testing.T, f func(t *testing.T, fl testredis.Flavor)) {
	for _, fl := range testredis.Flavors() {
		t.Run(string(fl), func(t *testing.T) { f(t, fl) })
	}
}

// onFlavor runs f as a subtest on the one server implementation fl: suites
// whose other variants run on the other implementation (a standalone run on
// Redis, its cluster run on Valkey) keep both covered at half the time.
func onFlavor(t *testing.T, fl testredis.Flavor, f func(t *testing.T, fl testredis.Flavor)) {
	t.Run(string(fl), func(t *testing.T) { f(t, fl) })
}

// share is n for Redis and half of it (at least 1) for Valkey: the long
// suites run on both, Valkey's run shorter to keep the suite's time.
func share(fl testredis.Flavor, n int) int {
	if fl == testredis.Redis {
		return n
	}
	return max(n/2, 1)
}

// envInt reads a positive integer test knob, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func testSeed(t *testing.T) uint64 {
	if v, err := strconv.ParseUint(os.Getenv("E2E_SEED"), 10, 64); err == nil {
		return v
	}
	s := uint64(time.Now().UnixNano())
	t.Logf("seed %d (rerun with E2E_SEED=%d)", s, s)
	return s
}

// TestCrashesStandalone: a generated log with duplicates, poison records and
// out-of-order timestamps; the consumer binary killed (-9) and stopped
// mid-stream while production goes on; at the end every key equals the model.
func TestCrashesStandalone(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		runScenario(t, scenario{flavor: fl, events: share(fl, envInt("E2E_EVENTS", 12000)), crashes: share(fl, envInt("E2E_CRASHES", 6)),
			seed: testSeed(t), batchSize: 200})
	})
}

// TestCrashesCluster: the same against a 3-master Redis Cluster, with a key
// prefix and a non-UTC time zone.
func TestCrashesCluster(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		runScenario(t, scenario{flavor: fl, cluster: true, prefix: "shop:", zone: "America/New_York",
			events: share(fl, envInt("E2E_EVENTS", 12000)), crashes: share(fl, envInt("E2E_CRASHES", 4)), seed: testSeed(t), batchSize: 300})
	})
}

func runScenario(t *testing.T, sc scenario) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(sc.seed, 7))
	views, clicks, orders, dlq := "shop.views", "shop.clicks", "shop.orders", "shop.dlq"
	topics := []string{views, clicks, orders}
	brokers := startKafka(t, 4, topics, dlq)

	var rdb redis.UniversalClient
	var addrs []string
	mode := "standalone"
	if sc.cluster {
		c := testredis.StartCluster(t, 3, testredis.WithFlavor(sc.flavor))
		rdb, addrs, mode = c.Client(), c.Addrs(), "cluster"
	} else {
		s := testredis.StartStandalone(t, testredis.WithFlavor(sc.flavor))
		rdb, addrs = s.Client(), []string{s.Addr()}
	}
	zone := sc.zone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = sc.seed
	gc.Start = start.Add(-36 * time.Hour)
	gc.Span = 36 * time.Hour
	gc.ViewsTopic, gc.ClicksTopic, gc.OrdersTopic = views, clicks, orders
	log := gen.New(gc).Log(sc.events)

	produced := make(chan error, 1)
	pctx, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	go produce(pctx, brokers, log, 200, 700*time.Millisecond, produced)

	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + strings.Join(addrs, ","),
		"PROJECTOR_REDIS_MODE=" + mode,
		"PROJECTOR_REDIS_KEY_PREFIX=" + sc.prefix,
		"PROJECTOR_TIME_ZONE=" + zone,
		"PROJECTOR_BATCH_MAX_EVENTS=" + strconv.Itoa(sc.batchSize),
		"PROJECTOR_LOG_FORMAT=json",
		"PROJECTOR_LOG_LEVEL=warn",
	}
	kills := 0
	for i := 0; i < sc.crashes; i++ {
		// Kill only a consumer that has joined the group (stable, one member),
		// and start the next one when the group is empty again:
		// the in-process broker (kfake) keeps a member killed in the middle of
		// its JoinGroup forever (seen: half the partitions stayed assigned to
		// the dead member for minutes); kills during a join belong to the
		// real-Kafka chaos suite.
		p := startConsumer(t, append(env[:len(env):len(env)], "PROJECTOR_HTTP_ADDR=127.0.0.1:0"))
		waitGroupMembers(t, brokers, "projector", 1)
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		if i%3 == 2 {
			p.term(t)
		} else {
			p.kill9(t)
			kills++
		}
		waitGroupMembers(t, brokers, "projector", 0)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	finalEnv := append(env[:len(env):len(env)], "PROJECTOR_HTTP_ADDR=127.0.0.1:0")
	if lvl := os.Getenv("E2E_FINAL_LOG_LEVEL"); lvl != "" {
		finalEnv = append(finalEnv[:len(finalEnv):len(finalEnv)], "PROJECTOR_LOG_LEVEL="+lvl)
	}
	final := startConsumer(t, finalEnv)
	waitGroupMembers(t, brokers, "projector", 1)
	if err := waitCaughtUp(brokers, "projector", topics, 3*time.Minute); err != nil {
		final.dumpStacks()
		t.Fatal(err)
	}
	final.term(t)
	t.Logf("%d records, %d consumer crashes (%d kill -9), processed in %v", len(log), sc.crashes, kills, time.Since(start).Round(time.Millisecond))

	opts := refmodel.Options{Projections: projections.Defaults(), Location: loc, KeyPrefix: sc.prefix, Window: 24 * time.Hour, Now: start}
	want := refmodel.Expected(opts, log)
	opts.Settle = time.Now().Add(5 * time.Second)
	if diffs := refmodel.Compare(ctx, rdb, want, opts, time.Second); len(diffs) > 0 {
		t.Errorf("%d differences between Redis and the model, first ones:\n%s", len(diffs), strings.Join(diffs[:min(len(diffs), 30)], "\n"))
	}
	if len(want) < 100 {
		t.Errorf("model holds only %d keys: the scenario exercises too little", len(want))
	}
	checkDeadLetters(t, brokers, topics, dlq, log)
}

// waitGroupMembers waits until the group is stable with exactly n members
// (n = 0: empty, the dead member's session has expired).
func waitGroupMembers(t *testing.T, brokers []string, group string, n int) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		res, err := client.DescribeGroups(context.Background(), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		if err == nil && len(res.Groups) == 1 {
			g := res.Groups[0]
			if len(g.Members) == n && (g.GroupState == "Stable" || n == 0) {
				return
			}
			last = fmt.Sprintf("state %s, %d members", g.GroupState, len(g.Members))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s not stable with %d members within 60s (%s)", group, n, last)
}

// checkModel asserts that every key, value and TTL (within 1 s) equals the
// reference model of log with the default projections in UTC; keys that expire
// within 5 s are excused.
func checkModel(t *testing.T, rdb redis.UniversalClient, log []gen.Record, start time.Time) {
	t.Helper()
	opts := refmodel.Options{Projections: projections.Defaults(), Location: time.UTC, Window: 24 * time.Hour, Now: start,
		Settle: time.Now().Add(5 * time.Second)}
	if diffs := refmodel.Compare(context.Background(), rdb, refmodel.Expected(opts, log), opts, time.Second); len(diffs) > 0 {
		t.Errorf("%d differences from the model, first ones:\n%s", len(diffs), strings.Join(diffs[:min(len(diffs), 30)], "\n"))
	}
}

// checkDeadLetters asserts the dead-letter topic holds exactly the poison
// records of the source topics, once each, with the headers of docs/contract.md section 2.
// A poison record the test's producer wrote twice (a retry during a broker
// restart) is two records of the log, each dead-lettered once.
func checkDeadLetters(t *testing.T, brokers, topics []string, dlq string, log []gen.Record) {
	t.Helper()
	poison := map[string]bool{}
	for _, r := range log {
		if r.Poison {
			poison[r.Topic+"|"+string(r.Value)] = true
		}
	}
	source := map[string]record{}
	var wantValues []string
	produced := map[string]bool{}
	for _, r := range readAll(t, brokers, topics) {
		source[fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)] = r
		if v := r.Topic + "|" + r.Value; poison[v] {
			wantValues = append(wantValues, v)
			produced[v] = true
		}
	}
	if len(produced) != len(poison) {
		t.Errorf("the source topics hold %d of the %d generated poison records", len(produced), len(poison))
	}
	var gotValues []string
	seen := map[string]bool{}
	for _, d := range readAll(t, brokers, []string{dlq}) {
		origin := d.Headers["source-topic"] + "/" + d.Headers["source-partition"] + "/" + d.Headers["source-offset"]
		if seen[origin] {
			t.Errorf("record %s dead-lettered twice", origin)
		}
		seen[origin] = true
		src, ok := source[origin]
		if !ok || src.Value != d.Value || src.Key != d.Key {
			t.Errorf("dead letter %s does not match its source record", origin)
		}
		if strings.TrimSpace(d.Headers["error"]) == "" || strings.Contains(d.Headers["error"], "\n") {
			t.Errorf("dead letter %s: error header %q is not one readable line", origin, d.Headers["error"])
		}
		gotValues = append(gotValues, d.Headers["source-topic"]+"|"+d.Value)
	}
	sort.Strings(wantValues)
	sort.Strings(gotValues)
	if strings.Join(wantValues, "\n") != strings.Join(gotValues, "\n") {
		t.Errorf("dead-letter topic holds %d records, want the %d poison records", len(gotValues), len(wantValues))
	}
	if len(wantValues) == 0 {
		t.Errorf("the generated log has no poison record")
	}
}
