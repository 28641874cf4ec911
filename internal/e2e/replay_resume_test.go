package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"projector/internal/dashboard/status"
	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// summaryLine is the replayer's summary of a resumed run.
var summaryLine = regexp.MustCompile(`replayed (\d+) records in .*, resumed after (\d+) records applied by the interrupted run`)

// TestReplayResumed: Redis loses everything (FLUSHALL) under a running
// consumer (real Apache Kafka, real redis-server); the replayer is killed
// with SIGKILL at a seeded random point of its replay and run again with
// the same command. The rerun is refused while the dead replayer's lease
// lasts, saying when to retry; then it continues from the watermarks (no
// wipe), reads only what was left, the consumer resumes and goes on with new
// records, and the end state equals the model.
func TestReplayResumed(t *testing.T) {
	srv := testredis.StartStandalone(t)
	runReplayResumed(t, srv.Client(), []string{srv.Addr()}, "standalone", 1, func(ctx context.Context) error {
		return srv.Client().FlushAll(ctx).Err()
	})
}

// TestReplayResumedCluster: the same on a 3-master Redis Cluster, with two
// lanes of partitions (--parallel 2).
func TestReplayResumedCluster(t *testing.T) {
	c := testredis.StartCluster(t, 3)
	runReplayResumed(t, c.Client(), c.Addrs(), "cluster", 2, c.FlushAll)
}

func runReplayResumed(t *testing.T, rdb redis.UniversalClient, addrs []string, mode string, lanes int, flushAll func(context.Context) error) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	brokers := startApacheKafka(t, 3, topics, "shop.dlq")
	log, rng, start := seededLog(t, 17)
	before, after := log[:len(log)*4/5], log[len(log)*4/5:]

	done := make(chan error, 1)
	go produce(ctx, brokers, before, 2000, 0, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	httpAddr := freeAddr(t)
	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + strings.Join(addrs, ","),
		"PROJECTOR_REDIS_MODE=" + mode,
		"PROJECTOR_LOG_LEVEL=warn",
	}
	c := startConsumer(t, append(env, "PROJECTOR_HTTP_ADDR="+httpAddr))
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	total := logSize(t, brokers, topics)
	if err := flushAll(ctx); err != nil {
		t.Fatal(err)
	}
	waitLossReported(t, httpAddr)

	// Small batches make many checkpoints; the kill comes once the
	// watermarks cover a seeded share of the log.
	args := []string{"--batch", "100", "--parallel", strconv.Itoa(lanes)}
	killAt := int64(float64(total) * (0.2 + 0.4*rng.Float64()))
	first := startProcess(t, replayerBin, env, args...)
	applied := waitApplied(t, rdb, first, killAt)
	first.kill9(t)
	meta := rdb.HGetAll(ctx, "px:meta:{g}").Val()
	if meta["status"] != "rebuilding" || meta["replay_plan"] == "" || meta["rebuild_total"] != strconv.FormatInt(total, 10) {
		t.Fatalf("after the kill px:meta:{g} = %v; want status rebuilding, the plan and the progress of %d records", meta, total)
	}
	st, err := status.New(status.Options{RDB: rdb}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(projections.EnabledNames(projections.Defaults())); len(st.Rebuilding) != n || st.Rebuilding[0].Total != total {
		t.Errorf("/api/status during the interrupted replay: rebuilding %+v, want the %d projections of %d records", st.Rebuilding, n, total)
	}
	t.Logf("replayer killed with %d of %d records under the watermarks; its output:\n%s", applied, total, tail(first.log.String(), 1500))

	out, err := rerun(env, args)
	if err == nil || !strings.Contains(out, "another replayer is running") || !regexp.MustCompile(`retry in \d+s`).MatchString(out) {
		t.Fatalf("rerun during the dead replayer's lease: err %v, output:\n%s", err, out)
	}
	t.Logf("rerun during the lease: %s", out)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		out, err = rerun(env, args)
		if err == nil || !strings.Contains(out, "another replayer is running") || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	t.Logf("rerun: %s", tail(out, 1500))
	m := summaryLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the rerun printed no resumed summary:\n%s", out)
	}
	read, prior := atoi64(t, m[1]), atoi64(t, m[2])
	if read+prior != total || prior < applied || read >= total {
		t.Errorf("rerun read %d records after %d applied before; want %d in all, at least %d applied before the kill", read, prior, total, applied)
	}
	if !strings.Contains(out, "keys wiped first 0") {
		t.Errorf("the rerun wiped keys: %s", out)
	}

	// The consumer resumes by itself and goes on with new records.
	if !waitMetric(httpAddr, "projector_redis_data_lost 0", 8*time.Second) {
		t.Fatalf("data-lost metric not reset within 8 s after the replay")
	}
	go produce(ctx, brokers, after, 500, 0, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	c.term(t)
	if got := rdb.HGet(ctx, "px:meta:{g}", "replay_plan").Val(); got != "" {
		t.Errorf("the plan stayed in px:meta:{g} after the replay: %s", got)
	}
	checkModel(t, rdb, log, start)
	checkDeadLetters(t, brokers, topics, "shop.dlq", log)
}

// rerun runs the replayer to its end and returns its output.
func rerun(env, args []string) (string, error) {
	rp := exec.Command(replayerBin, args...)
	rp.Env = cleanEnv(env)
	out, err := rp.CombinedOutput()
	return string(out), err
}

// waitApplied waits until the global watermarks of px:wm:{g} cover at least
// n records and returns how many they cover; the replayer p must not end first.
func waitApplied(t *testing.T, rdb redis.UniversalClient, p *proc, n int64) int64 {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		select {
		case <-p.done:
			p.done <- nil
			t.Fatalf("the replayer ended before it was killed:\n%s", tail(p.log.String(), 2000))
		default:
		}
		var got int64
		for _, v := range rdb.HGetAll(context.Background(), "px:wm:{g}").Val() {
			if wm, err := strconv.ParseInt(v, 10, 64); err == nil {
				got += wm + 1 // every partition starts at offset 0
			}
		}
		if got >= n {
			return got
		}
	}
	t.Fatalf("the watermarks did not reach %d records within 2 minutes", n)
	return 0
}

// logSize is the number of records of the topics (the sum of their end offsets).
func logSize(t *testing.T, brokers, topics []string) int64 {
	t.Helper()
	ends, _, err := endOffsets(context.Background(), &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}, topics)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ends {
		n += e
	}
	return n
}

func atoi64(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
