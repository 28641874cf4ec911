package app

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/config"
	"projector/internal/testing/testredis"
	"projector/internal/testing/testtls"
)

const testPassword = "Pa55-w0rd-for-tests"

// loadConfig loads a configuration from environment entries, failing t.
func loadConfig(t *testing.T, env ...string) config.Config {
	t.Helper()
	cfg, err := config.Load(nil, env)
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	return cfg
}

// ping sends PING through a client built by NewRedis.
func ping(cfg config.Config) (string, error) {
	rdb := NewRedis(cfg.Redis)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return "", err
	}
	return rdb.Do(ctx, "ACL", "WHOAMI").Text()
}

func TestRedisACLUser(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	if err := srv.Client().Do(ctx, "ACL", "SETUSER", "app", "on", ">"+testPassword, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	who, err := ping(loadConfig(t, "PROJECTOR_REDIS_ADDRS="+srv.Addr(), "PROJECTOR_REDIS_USERNAME=app", "PROJECTOR_REDIS_PASSWORD="+testPassword))
	if err != nil || who != "app" {
		t.Fatalf("with the right password: whoami %q, error %v; want app", who, err)
	}
	_, err = ping(loadConfig(t, "PROJECTOR_REDIS_ADDRS="+srv.Addr(), "PROJECTOR_REDIS_USERNAME=app", "PROJECTOR_REDIS_PASSWORD=wrong-"+testPassword))
	if err == nil || !permanent(err) {
		t.Fatalf("with a wrong password: error %v; want a permanent auth error", err)
	}
	msg := redisSetupError(err).Error()
	if !strings.Contains(msg, "redis refused the credentials") || strings.Contains(msg, testPassword) {
		t.Fatalf("setup error %q: want the reason and never the password", msg)
	}
	// a user without the scripting commands: NOPERM, wrapped, is permanent too
	if err := srv.Client().Do(ctx, "ACL", "SETUSER", "app", "-@scripting").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	rdb := NewRedis(loadConfig(t, "PROJECTOR_REDIS_ADDRS="+srv.Addr(), "PROJECTOR_REDIS_USERNAME=app", "PROJECTOR_REDIS_PASSWORD="+testPassword).Redis)
	defer rdb.Close()
	err = rdb.ScriptLoad(ctx, "return 1").Err()
	if err == nil || !permanent(fmt.Errorf("load apply script: %w", err)) {
		t.Fatalf("SCRIPT LOAD without the permission: error %v; want a permanent permission error", err)
	}
	if msg := redisSetupError(fmt.Errorf("load apply script: %w", err)).Error(); !strings.Contains(msg, "refused a command to this user") ||
		!strings.Contains(msg, "docs/operations.md") {
		t.Errorf("setup error %q: want it to say the user lacks a command, and where the ACL is listed", msg)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startTLSRedis starts redis-server with a TLS port that requires client
// certificates and returns its address.
func startTLSRedis(t *testing.T, certs testtls.Files) string {
	t.Helper()
	port := strconv.Itoa(freePort(t))
	testredis.StartStandalone(t, testredis.WithArgs("--tls-port", port, "--tls-cert-file", certs.ServerCert,
		"--tls-key-file", certs.ServerKey, "--tls-ca-cert-file", certs.CA, "--tls-auth-clients", "yes"))
	return "127.0.0.1:" + port
}

func TestRedisTLS(t *testing.T) {
	certs := testtls.New(t)
	addr := startTLSRedis(t, certs)
	base := []string{"PROJECTOR_REDIS_ADDRS=" + addr, "PROJECTOR_REDIS_TLS_ENABLED=true", "PROJECTOR_REDIS_TLS_CA_FILE=" + certs.CA}
	client := []string{"PROJECTOR_REDIS_TLS_CERT_FILE=" + certs.ClientCert, "PROJECTOR_REDIS_TLS_KEY_FILE=" + certs.ClientKey}
	if who, err := ping(loadConfig(t, append(base, client...)...)); err != nil || who != "default" {
		t.Fatalf("TLS with a client certificate: whoami %q, error %v", who, err)
	}
	other := testtls.New(t)
	cases := map[string][]string{
		"no client certificate": base,
		"unknown server CA": append([]string{"PROJECTOR_REDIS_ADDRS=" + addr, "PROJECTOR_REDIS_TLS_ENABLED=true",
			"PROJECTOR_REDIS_TLS_CA_FILE=" + other.CA}, client...),
		"wrong server name": append(append(base, client...), "PROJECTOR_REDIS_TLS_SERVER_NAME=redis.example"),
	}
	for name, env := range cases {
		_, err := ping(loadConfig(t, env...))
		if err == nil || !permanent(err) {
			t.Errorf("%s: error %v; want a permanent TLS error", name, err)
		}
	}
}

// TestReadClientRetries: the consumer's standalone client leaves every
// retry to projector (a broken connection must come back to the batch's
// retry, which re-reads the watermarks); the API's client lets go-redis retry
// its reads. (A cluster client retries within its MaxRedirects either way.)
func TestReadClientRetries(t *testing.T) {
	cfg := loadConfig(t, "PROJECTOR_REDIS_ADDRS=127.0.0.1:1", "PROJECTOR_KAFKA_BROKERS=127.0.0.1:1")
	retries := func(c redis.UniversalClient) int {
		defer c.Close()
		sc, ok := c.(*redis.Client)
		if !ok {
			t.Fatalf("unexpected client type %T", c)
		}
		return sc.Options().MaxRetries
	}
	if n := retries(NewRedis(cfg.Redis)); n != 0 {
		t.Errorf("NewRedis: MaxRetries = %d after go-redis's defaults, want 0 (no retry inside go-redis)", n)
	}
	if n := retries(NewReadRedis(cfg.Redis)); n < 1 {
		t.Errorf("NewReadRedis: MaxRetries = %d, want go-redis retries (>= 1)", n)
	}
}
