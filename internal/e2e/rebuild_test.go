package e2e

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/gen"
	"projector/internal/testing/testredis"
)

// TestRebuildWhileRunning: trending, bestsellers, last_viewed and stats are
// switched on after the consumers have run without them; the replayer
// rebuilds last_viewed,stats (chase and handover) and then
// trending,bestsellers (hold) from the log while a consumer keeps
// running and production goes on. A sampler fails the test if the group's
// committed offsets or product_views (not rebuilt) stand still for more than
// 5 s while records are produced, or the consumer's /readyz answers
// anything but 200, during the rebuilds and 6 s after them. The end state equals the model with every
// projection on: no gap, no double count.
func TestRebuildWhileRunning(t *testing.T) {
	onFlavor(t, testredis.Redis, func(t *testing.T, fl testredis.Flavor) {
		srv := testredis.StartStandalone(t, testredis.WithFlavor(fl))
		runRebuild(t, srv.Client(), []string{srv.Addr()}, "standalone")
	})
}

// TestRebuildWhileRunningCluster: the same on a 3-master Valkey cluster
// (the standalone run is on Redis; the seeded rebuild runs and the
// exploration cover the other combinations).
func TestRebuildWhileRunningCluster(t *testing.T) {
	onFlavor(t, testredis.Valkey, func(t *testing.T, fl testredis.Flavor) {
		c := testredis.StartCluster(t, 3, testredis.WithFlavor(fl))
		runRebuild(t, c.Client(), c.Addrs(), "cluster")
	})
}

// rebuildEnv is the environment of the rebuild tests' processes.
func rebuildEnv(brokers, addrs []string, mode string) []string {
	return []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + strings.Join(addrs, ","),
		"PROJECTOR_REDIS_MODE=" + mode,
		"PROJECTOR_BATCH_MAX_EVENTS=300",
		"PROJECTOR_LOG_LEVEL=warn",
		"PROJECTOR_HTTP_ADDR=127.0.0.1:0",
	}
}

// withEnv returns env with more appended (env itself unchanged).
func withEnv(env []string, more ...string) []string {
	return append(env[:len(env):len(env)], more...)
}

// rebuildSetup runs the first 40% of the log through a consumer without the
// projections off, starts a consumer with every projection on (batches of
// 50, serving HTTP on httpAddr), produces the next 30% at once and starts trickling the rest, chunk
// records every 100 ms (see trickle). It returns the log, the trickle and
// the consumer.
func rebuildSetup(t *testing.T, brokers []string, env []string, start time.Time, off []string, chunk int, httpAddr string) ([]gen.Record, *trickle, *proc) {
	ctx := context.Background()
	gc := gen.DefaultConfig()
	gc.Seed = testSeed(t)
	gc.Start, gc.Span = start.Add(-36*time.Hour), 36*time.Hour
	log := gen.New(gc).Log(envInt("E2E_EVENTS", 10000))
	a, b := len(log)*4/10, len(log)*7/10
	done := make(chan error, 1)
	go produce(ctx, brokers, log[:a], 200, 100*time.Millisecond, done)
	var disable []string
	for _, p := range off {
		disable = append(disable, "PROJECTOR_PROJECTIONS_"+strings.ToUpper(p)+"_ENABLED=false")
	}
	old := startConsumer(t, withEnv(env, disable...))
	waitGroupMembers(t, brokers, "projector", 1)
	time.Sleep(2 * time.Second)
	old.term(t)
	waitGroupMembers(t, brokers, "projector", 0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c := startConsumer(t, withEnv(env, "PROJECTOR_BATCH_MAX_EVENTS=50", "PROJECTOR_HTTP_ADDR="+httpAddr))
	waitGroupMembers(t, brokers, "projector", 1)
	produce(ctx, brokers, log[a:b], 1000, 0, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return log, startTrickle(brokers, log[b:], chunk), c
}

func runRebuild(t *testing.T, rdb redis.UniversalClient, addrs []string, mode string) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	brokers := startKafka(t, 3, topics, "shop.dlq")
	start := time.Now()
	env := rebuildEnv(brokers, addrs, mode)
	httpAddr := freeAddr(t)
	log, tr, _ := rebuildSetup(t, brokers, env, start, []string{"trending", "bestsellers", "last_viewed", "stats"}, 10, httpAddr)
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
	watch := watchProgress(brokers, topics, rdb, start, tr, "http://"+httpAddr+"/readyz")
	// on standalone servers the per-user rebuild replays at most a tenth of
	// the log per second, so that it lasts longer than stallLimit: consumers
	// paused for the whole replay would stand still long enough for the
	// sampler to fail the test (the cluster runs keep the suite's time)
	paced := mode == "standalone"
	rate := len(log) / 10
	for _, names := range []string{"last_viewed,stats", "trending,bestsellers"} {
		args := []string{"--projections", names, "--wipe", "--yes"}
		if paced && names == "last_viewed,stats" {
			args = append(args, "--max-rate", strconv.Itoa(rate))
		}
		rp := exec.Command(replayerBin, args...)
		rp.Env = cleanEnv(env)
		began := time.Now()
		out, err := rp.CombinedOutput()
		if err != nil {
			t.Fatalf("replayer --projections %s: %v\n%s", names, err, out)
		}
		if took := time.Since(began); paced && names == "last_viewed,stats" && took < stallLimit {
			t.Errorf("replayer --projections %s took %v, less than the sampler's stall limit %v: the sampler would not see consumers paused for the whole replay", names, took, stallLimit)
		}
		t.Logf("replayer --projections %s: %s", names, tail(string(out), 300))
		if names == "last_viewed,stats" && !strings.Contains(string(out), "handover: consumers paused for") {
			t.Errorf("replayer --projections %s did not hand over with a pause: %s", names, tail(string(out), 500))
		}
	}
	// a rebuild of this log takes a second or two: watch on for longer than
	// stallLimit, so that consumers left stuck by a rebuild are seen too
	time.Sleep(stallLimit + time.Second)
	watch.stop(t)
	finishRebuild(t, ctx, rdb, brokers, topics, tr, log, start)
}

// finishRebuild produces the rest of the log, waits until the group caught
// up and checks the end state: no rebuild left in the meta hash, none of its
// checkpoints, every key as the model says.
func finishRebuild(t *testing.T, ctx context.Context, rdb redis.UniversalClient, brokers, topics []string, tr *trickle, log []gen.Record, start time.Time) {
	t.Helper()
	if tr.finish() {
		t.Errorf("production ended before the rebuilds did: the test did not produce during the whole rebuild")
	}
	if err := tr.wait(); err != nil {
		t.Fatal(err)
	}
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	meta := rdb.HGetAll(ctx, "px:meta:{g}").Val()
	if meta["status"] != "ready" {
		t.Errorf("meta status after the rebuilds: %q, want ready", meta["status"])
	}
	for f := range meta {
		if strings.HasPrefix(f, "hold:") || f == "rebuild" || f == "sync" || f == "pause" {
			t.Errorf("meta field %s left after the rebuilds", f)
		}
	}
	if keys := scanAll(t, rdb, "px:rwm:*"); len(keys) > 0 {
		t.Errorf("rebuild checkpoints left: %v", keys[:min(len(keys), 5)])
	}
	checkModel(t, rdb, log, start)
	checkDeadLetters(t, brokers, topics, "shop.dlq", log)
}

// scanAll returns the keys matching pattern on every master.
func scanAll(t *testing.T, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	one := func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, pattern).Result()
		out = append(out, keys...)
		return err
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu atomic.Int32
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			for !mu.CompareAndSwap(0, 1) {
				time.Sleep(time.Millisecond)
			}
			defer mu.Store(0)
			return one(ctx, c)
		})
	} else {
		err = one(ctx, rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatalf("scan %s: %v", pattern, err)
	}
	return out
}
