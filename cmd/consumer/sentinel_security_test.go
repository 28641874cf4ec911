package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"projector/internal/testing/testredis"
)

// Behind Sentinels that require a password: a wrong one stops start-up
// with one error line naming the redis.sentinel keys; with the right one
// (from a file) the consumer starts, and neither its debug log nor
// /metrics show the password.
func TestSentinelPasswordStopsStartupOrStaysSecret(t *testing.T) {
	s := testredis.StartSentinel(t, 1, testredis.WithSentinelPassword(redisSecret))
	env := []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=" + strings.Join(s.Addrs(), ","),
		"PROJECTOR_REDIS_SENTINEL_MASTER_NAME=" + s.MasterName(), "PROJECTOR_KAFKA_BROKERS=127.0.0.1:9"}

	wrong := "wrong-" + redisSecret
	p := startBinary(t, append(env, "PROJECTOR_REDIS_SENTINEL_PASSWORD="+wrong)...)
	if code := p.wait(t, time.Minute); code == 0 {
		t.Fatal("consumer exited 0 with a wrong Sentinel password")
	}
	errs := p.errorLines()
	if len(errs) != 1 || !strings.Contains(errs[0], "refused the credentials (check redis.sentinel.username and redis.sentinel.password") {
		t.Fatalf("want one error line naming the redis.sentinel keys, got %d:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	assertNoSecret(t, "the output", p.out.String(), wrong)

	file := filepath.Join(t.TempDir(), "sentinel-password")
	if err := os.WriteFile(file, []byte(redisSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p = startBinary(t, append(env, "PROJECTOR_REDIS_SENTINEL_PASSWORD_FILE="+file, "PROJECTOR_LOG_LEVEL=debug")...)
	p.waitLog(t, "projections enabled")
	assertNoSecret(t, "/metrics", p.metrics(t), redisSecret)
	p.stop(t)
	assertNoSecret(t, "the log", p.out.String(), redisSecret)
	if !strings.Contains(p.out.String(), "redis master found through the Sentinels") {
		t.Fatalf("the consumer did not reach the master through the Sentinels:\n%s", p.out.String())
	}
}
