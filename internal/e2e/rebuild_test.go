package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/gen"
	"projector/internal/testredis"
)

// TestRebuildWhileRunning: trending, bestsellers, last_viewed and stats are
// switched on after the consumers have run without them; the replayer
// rebuilds them from the log while a consumer keeps running and production
// goes on: the global ones held in the consumer, the per-user ones with the
// consumer paused between batches. The end state equals the model with every
// projection on: no gap, no double count.
func TestRebuildWhileRunning(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		srv := testredis.StartStandalone(t, testredis.WithFlavor(fl))
		runRebuild(t, srv.Client(), []string{srv.Addr()}, "standalone")
	})
}

// TestRebuildWhileRunningCluster: the same on a 3-master Redis Cluster.
func TestRebuildWhileRunningCluster(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		c := testredis.StartCluster(t, 3, testredis.WithFlavor(fl))
		runRebuild(t, c.Client(), c.Addrs(), "cluster")
	})
}

func runRebuild(t *testing.T, rdb redis.UniversalClient, addrs []string, mode string) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	brokers := startKafka(t, 3, topics, "shop.dlq")
	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = testSeed(t)
	gc.Start, gc.Span = start.Add(-36*time.Hour), 36*time.Hour
	log := gen.New(gc).Log(envInt("E2E_EVENTS", 10000))

	// 40% trickles in while the old consumers run, 40% arrives in one burst
	// right before the rebuild (so the consumer lags behind the replayed
	// offsets while it holds), the rest trickles in during and after it.
	a, b := len(log)*4/10, len(log)*8/10
	done := make(chan error, 1)
	go produce(ctx, brokers, log[:a], 200, 100*time.Millisecond, done)
	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + strings.Join(addrs, ","),
		"PROJECTOR_REDIS_MODE=" + mode,
		"PROJECTOR_BATCH_MAX_EVENTS=300",
		"PROJECTOR_LOG_LEVEL=warn",
		"PROJECTOR_HTTP_ADDR=127.0.0.1:0",
	}
	old := startConsumer(t, append(env[:len(env):len(env)],
		"PROJECTOR_PROJECTIONS_TRENDING_ENABLED=false", "PROJECTOR_PROJECTIONS_BESTSELLERS_ENABLED=false",
		"PROJECTOR_PROJECTIONS_LAST_VIEWED_ENABLED=false", "PROJECTOR_PROJECTIONS_STATS_ENABLED=false"))
	waitGroupMembers(t, brokers, "projector", 1)
	time.Sleep(2 * time.Second)
	old.term(t)
	waitGroupMembers(t, brokers, "projector", 0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c := startConsumer(t, append(env[:len(env):len(env)], "PROJECTOR_BATCH_MAX_EVENTS=50"))
	waitGroupMembers(t, brokers, "projector", 1)
	produce(ctx, brokers, log[a:b], 1000, 0, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go produce(ctx, brokers, log[b:], 20, 100*time.Millisecond, done)

	time.Sleep(3500 * time.Millisecond) // the consumer publishes its settings every 3 s
	for _, refused := range []struct {
		args []string
		env  string
		why  string
	}{
		{[]string{"--projections", "trending"}, "", "--wipe"},
		{[]string{"--projections", "last_viewed"}, "", "--wipe"},
		{[]string{"--projections", "trending", "--wipe", "--yes"}, "PROJECTOR_TIME_ZONE=America/New_York", "disagrees"},
	} {
		rp := exec.Command(replayerBin, refused.args...)
		rp.Env = cleanEnv(env)
		if refused.env != "" {
			rp.Env = append(rp.Env, refused.env)
		}
		if out, err := rp.CombinedOutput(); err == nil || !strings.Contains(string(out), "refusing") || !strings.Contains(string(out), refused.why) {
			t.Errorf("replayer %v %s: err %v, want a refusal naming %q; output %s", refused.args, refused.env, err, refused.why, out)
		}
	}
	for _, names := range []string{"trending,bestsellers", "last_viewed,stats"} {
		rp := exec.Command(replayerBin, "--projections", names, "--wipe", "--yes")
		rp.Env = cleanEnv(env)
		out, err := rp.CombinedOutput()
		if err != nil {
			t.Fatalf("replayer --projections %s: %v\n%s", names, err, out)
		}
		t.Logf("replayer --projections %s: %s", names, tail(string(out), 300))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		c.dumpStacks()
		t.Fatal(err)
	}
	c.term(t)
	if n := rdb.HLen(ctx, "px:meta:{g}").Val(); n == 0 || rdb.HExists(ctx, "px:meta:{g}", "hold:trending").Val() {
		t.Errorf("the hold was not released")
	}
	if st := rdb.HGet(ctx, "px:meta:{g}", "status").Val(); st != "ready" {
		t.Errorf("meta status after the rebuilds: %q, want ready", st)
	}
	checkModel(t, rdb, log, start)
	checkDeadLetters(t, brokers, topics, "shop.dlq", log)
}
