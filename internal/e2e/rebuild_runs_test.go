package e2e

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/gen"
	"projector/internal/testing/testredis"
)

// TestRebuildRunsStandalone explores a rebuild of last_viewed,stats next to
// a running consumer over many generated logs (E2E_REBUILD_RUNS seeds, 2 by
// default; `make soak` runs 20): duplicates of clicks and orders published
// in another partition than their first copy, late (out-of-order) and
// backfilled events, poison; production running through the chase rounds
// and the handover, the replayer started at a point the seed picks; then a
// rebuild of two global projections (hold) likewise. Every
// key and TTL equals the model of the whole log. A failing run names its
// seed: rerun it with E2E_SEED=<seed> E2E_REBUILD_RUNS=1.
func TestRebuildRunsStandalone(t *testing.T) {
	runRebuilds(t, func(t *testing.T) (redis.UniversalClient, []string, string) {
		srv := testredis.StartStandalone(t)
		return srv.Client(), []string{srv.Addr()}, "standalone"
	})
}

// TestRebuildRunsCluster: the same on a 3-master Redis Cluster.
func TestRebuildRunsCluster(t *testing.T) {
	runRebuilds(t, func(t *testing.T) (redis.UniversalClient, []string, string) {
		c := testredis.StartCluster(t, 3)
		return c.Client(), c.Addrs(), "cluster"
	})
}

// runRebuilds runs rebuildRun once per seed, each on a fresh broker and
// Redis from start.
func runRebuilds(t *testing.T, start func(t *testing.T) (redis.UniversalClient, []string, string)) {
	base := testSeed(t)
	for i := range envInt("E2E_REBUILD_RUNS", 2) {
		seed := base + uint64(i)
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			rdb, addrs, mode := start(t)
			rebuildRun(t, seed, rdb, addrs, mode)
		})
	}
}

// rebuildRun: 75% of a generated log applied by a consumer with last_viewed
// off, then a consumer with every projection on while the rest is produced
// in small chunks; after delays the seed picks, the replayer rebuilds
// last_viewed,stats (wipe, chase, handover), then bestsellers,recent_orders
// (hold).
func rebuildRun(t *testing.T, seed uint64, rdb redis.UniversalClient, addrs []string, mode string) {
	t.Logf("seed %d (rerun with E2E_SEED=%d E2E_REBUILD_RUNS=1)", seed, seed)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	brokers := startKafka(t, 3, topics, "shop.dlq")
	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed, gc.Users, gc.Products = seed, 300, 200
	gc.Start, gc.Span = start.Add(-30*time.Hour), 30*time.Hour
	gc.DupRate, gc.MoveDupRate, gc.OutOfOrderRate, gc.BackfillRate = 0.04, 0.5, 0.08, 0.01
	log := gen.New(gc).Log(envInt("E2E_EVENTS", 6000))
	env := rebuildEnv(brokers, addrs, mode)
	cut := len(log) * 3 / 4
	done := make(chan error, 1)
	produce(ctx, brokers, log[:cut], 1000, 0, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	old := startConsumer(t, withEnv(env, "PROJECTOR_PROJECTIONS_LAST_VIEWED_ENABLED=false"))
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	old.term(t)
	waitGroupMembers(t, brokers, "projector", 0)
	startConsumer(t, withEnv(env, "PROJECTOR_BATCH_MAX_EVENTS="+strconv.Itoa(20+rng.IntN(200))))
	waitGroupMembers(t, brokers, "projector", 1)
	time.Sleep(3500 * time.Millisecond) // the consumer publishes its settings every 3 s
	tr := startTrickle(brokers, log[cut:], max((len(log)-cut)/100, 1))
	for _, names := range []string{"last_viewed,stats", "bestsellers,recent_orders"} {
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
		rp := exec.Command(replayerBin, "--projections", names, "--wipe", "--yes")
		rp.Env = cleanEnv(env)
		out, err := rp.CombinedOutput()
		if err != nil {
			t.Fatalf("replayer --projections %s: %v\n%s", names, err, out)
		}
		if paused := strings.Contains(string(out), "handover: consumers paused for"); paused != (names == "last_viewed,stats") {
			t.Errorf("replayer --projections %s: handover with a pause %v, want %v: %s", names, paused, !paused, tail(string(out), 500))
		}
	}
	finishRebuild(t, ctx, rdb, brokers, topics, tr, log, start)
}
