package e2e

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"projector/internal/testing/testredis"
)

// TestRebuildResumed: with a real Apache Kafka broker, the replayer
// rebuilding last_viewed,stats is killed with SIGKILL at a random (seeded)
// moment of its chase, the consumer is killed with SIGKILL right after and
// restarted, and the same command is run again while production goes on.
// The rerun resumes from the checkpoints (it says so, and reads fewer
// records than the log holds, none at or below the checkpoints) and the end
// state equals the model.
func TestRebuildResumed(t *testing.T) {
	ctx := context.Background()
	srv := testredis.StartStandalone(t)
	rdb := srv.Client()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	brokers := startApacheKafka(t, 3, topics, "shop.dlq")
	start := time.Now()
	env := rebuildEnv(brokers, []string{srv.Addr()}, "standalone")
	// the rerun waits for the killed replayer's lease (10 s) and for the
	// killed consumer's entry in px:cfg:{g} to expire (30 s): trickle slowly
	log, tr, consumer := rebuildSetup(t, brokers, env, start, []string{"last_viewed", "stats"}, 4, freeAddr(t))
	time.Sleep(3500 * time.Millisecond) // the consumer publishes its settings every 3 s

	args := []string{"--projections", "last_viewed,stats", "--wipe", "--yes", "--batch", "50"}
	rp := exec.Command(replayerBin, args...)
	rp.Env = cleanEnv(env)
	var first bytes.Buffer
	rp.Stdout, rp.Stderr = &first, &first
	if err := rp.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- rp.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for rdb.Exists(ctx, "px:rwm:{g}").Val() == 0 { // the chase applied its first batch
		if time.Now().After(deadline) {
			t.Fatalf("the replayer did not start its chase within a minute:\n%s", first.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	rng := rand.New(rand.NewPCG(testSeed(t), 17))
	time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
	_ = rp.Process.Kill()
	<-exited
	if rdb.HGet(ctx, "px:meta:{g}", "rebuild").Val() == "" {
		t.Fatalf("the replayer finished before it was killed; the test did not interrupt it:\n%s", first.String())
	}
	checkpoint := rdb.HGetAll(ctx, "px:rwm:{g}").Val()
	t.Logf("replayer killed during its chase; px:rwm:{g} = %v", checkpoint)
	var before int // records at or below the checkpoints: never read again
	for _, v := range checkpoint {
		o, _ := strconv.Atoi(v)
		before += o + 1
	}

	// a consumer killed during the rebuild (maybe between the user and the
	// global phase of a batch) and started again
	consumer.kill9(t)
	startConsumer(t, withEnv(env, "PROJECTOR_BATCH_MAX_EVENTS=50"))

	rerun := exec.Command(replayerBin, args...)
	rerun.Env = cleanEnv(env)
	out, err := rerun.CombinedOutput()
	if err != nil {
		t.Fatalf("replayer rerun: %v\n%s", err, out)
	}
	t.Logf("replayer rerun: %s", tail(string(out), 400))
	if !strings.Contains(string(out), "resuming the interrupted rebuild") {
		t.Errorf("the rerun did not resume the rebuild:\n%s", tail(string(out), 1000))
	}
	m := regexp.MustCompile(`replayed (\d+) records`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no summary in the rerun's output:\n%s", tail(string(out), 1000))
	}
	if n, _ := strconv.Atoi(m[1]); n >= len(log) || n+before > len(log) {
		t.Errorf("the rerun replayed %d records, want fewer than the %d of the whole log, none of the %d at or below the checkpoints",
			n, len(log), before)
	}
	finishRebuild(t, ctx, rdb, brokers, topics, tr, log, start)
}
