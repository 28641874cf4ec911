package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"projector/internal/testing/testredis"
)

const redisSecret = "r3dis-Secret-for-tests"

// startACLRedis starts redis-server with an ACL user "app" whose password is
// redisSecret, and the default user switched off.
func startACLRedis(t *testing.T) *testredis.Server {
	t.Helper()
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	c := srv.Client()
	if err := c.Do(ctx, "ACL", "SETUSER", "app", "on", ">"+redisSecret, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatalf("ACL SETUSER app: %v", err)
	}
	if err := c.Do(ctx, "ACL", "SETUSER", "default", "off").Err(); err != nil {
		t.Fatalf("ACL SETUSER default off: %v", err)
	}
	return srv
}

// A wrong Redis password stops start-up with one clear error line.
func TestWrongRedisPasswordStopsStartup(t *testing.T) {
	srv := startACLRedis(t)
	wrong := "wrong-" + redisSecret
	p := startBinary(t, "PROJECTOR_REDIS_ADDRS="+srv.Addr(), "PROJECTOR_KAFKA_BROKERS=127.0.0.1:9",
		"PROJECTOR_REDIS_USERNAME=app", "PROJECTOR_REDIS_PASSWORD="+wrong)
	if code := p.wait(t, time.Minute); code == 0 {
		t.Fatal("consumer exited 0 with a wrong Redis password")
	}
	errs := p.errorLines()
	if len(errs) != 1 || !strings.Contains(errs[0], "redis refused the credentials") || !strings.Contains(errs[0], "WRONGPASS") {
		t.Fatalf("want one error line saying Redis refused the credentials, got %d:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	assertNoSecret(t, "the output", p.out.String(), wrong)
}

// With the right password (from a file) the consumer starts, and neither
// its debug log nor /metrics show the password.
func TestRedisPasswordNotInLogsOrMetrics(t *testing.T) {
	srv := startACLRedis(t)
	file := filepath.Join(t.TempDir(), "redis-password")
	if err := os.WriteFile(file, []byte(redisSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, "PROJECTOR_REDIS_ADDRS="+srv.Addr(), "PROJECTOR_KAFKA_BROKERS=127.0.0.1:9",
		"PROJECTOR_REDIS_USERNAME=app", "PROJECTOR_REDIS_PASSWORD_FILE="+file, "PROJECTOR_LOG_LEVEL=debug")
	p.waitLog(t, "projections enabled")
	assertNoSecret(t, "/metrics", p.metrics(t), redisSecret)
	p.stop(t)
	assertNoSecret(t, "the log", p.out.String(), redisSecret)
	if n := strings.Count(p.out.String(), "\n"); n < 3 {
		t.Fatalf("only %d log lines: the check above saw nothing", n)
	}
}
