package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"projector/internal/gen"
	"projector/internal/refmodel"
	"projector/internal/testredis"
	"projector/pkg/projections"
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

// get returns the status and body of an HTTP GET ("" on error).
func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRecoveryAfterFlushAll: the consumer notices that Redis lost its data,
// stops and reports it; the replayer rebuilds from Kafka while production goes
// on; the consumer resumes by itself; the end state equals the model.
func TestRecoveryAfterFlushAll(t *testing.T) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	brokers := startKafka(t, 3, topics, "shop.dlq")
	srv := testredis.StartStandalone(t)
	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = testSeed(t)
	gc.Start, gc.Span = start.Add(-36*time.Hour), 36*time.Hour
	log := gen.New(gc).Log(envInt("E2E_EVENTS", 8000))
	half := len(log) / 2

	done := make(chan error, 1)
	produce(ctx, brokers, log[:half], 1000, 0, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	httpAddr := freeAddr(t)
	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + srv.Addr(),
		"PROJECTOR_BATCH_MAX_EVENTS=500",
		"PROJECTOR_LOG_LEVEL=warn",
	}
	c := startConsumer(t, append(env, "PROJECTOR_HTTP_ADDR="+httpAddr))
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	go produce(ctx, brokers, log[half:], 500, 100*time.Millisecond, done)

	deadline := time.Now().Add(20 * time.Second)
	for {
		code, reason := get("http://" + httpAddr + "/readyz")
		_, metrics := get("http://" + httpAddr + "/metrics")
		if code == http.StatusServiceUnavailable && strings.Contains(reason, "lost") && strings.Contains(metrics, "projector_redis_data_lost 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer did not report the data loss: readyz %d %q", code, reason)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, k := range srv.Client().Keys(ctx, "*").Val() {
		if !strings.HasPrefix(k, "px:") {
			t.Errorf("consumer wrote projection key %s after the loss", k)
		}
	}

	rp := exec.Command(replayerBin)
	rp.Env = cleanEnv(env)
	out, err := rp.CombinedOutput()
	if err != nil {
		t.Fatalf("replayer: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "replayed ") {
		t.Errorf("replayer printed no summary:\n%s", out)
	}
	t.Logf("replayer: %s", tail(string(out), 400))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, metrics := get("http://" + httpAddr + "/metrics"); !strings.Contains(metrics, "projector_redis_data_lost 0") {
		t.Errorf("data-lost metric not reset after the replay")
	}
	c.term(t)

	opts := refmodel.Options{Projections: projections.Defaults(), Location: time.UTC, Window: 24 * time.Hour, Now: start,
		Settle: time.Now().Add(5 * time.Second)}
	want := refmodel.Expected(opts, log)
	if diffs := refmodel.Compare(ctx, srv.Client(), want, opts, time.Second); len(diffs) > 0 {
		t.Errorf("%d differences after recovery, first ones:\n%s", len(diffs), strings.Join(diffs[:min(len(diffs), 30)], "\n"))
	}
	// A second replayer run finds nothing lost and refuses.
	rp = exec.Command(replayerBin)
	rp.Env = cleanEnv(env)
	if out, err := rp.CombinedOutput(); err == nil || !strings.Contains(string(out), "did not lose") {
		t.Errorf("replayer on intact Redis: err %v, output %s", err, out)
	}
}
