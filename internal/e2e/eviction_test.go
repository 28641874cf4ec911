package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"projector/internal/testing/testredis"
)

// refusalLine is the one line of a refused start against addr with policy.
func refusalLine(addr, policy string) string {
	return "redis " + addr + ": maxmemory-policy is " + policy + ": evicting keys would drop projections and " +
		"idempotency markers (set it to noeviction, or accept it with redis.allow_eviction=true)"
}

// logLinesWith returns the decoded JSON log lines of out whose text contains s.
func logLinesWith(t *testing.T, out, s string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, s) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not a JSON log line: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// assertOneLine asserts that out holds exactly one line naming
// maxmemory-policy, at level, whose message contains every one of want.
func assertOneLine(t *testing.T, name, out, level string, want ...string) {
	t.Helper()
	lines := logLinesWith(t, out, "maxmemory-policy")
	if len(lines) != 1 {
		t.Fatalf("%s: %d lines name maxmemory-policy, want one:\n%s", name, len(lines), tail(out, 3000))
	}
	msg, _ := lines[0]["msg"].(string)
	if _, ok := lines[0]["stacktrace"]; ok {
		t.Errorf("%s: the line carries a stack trace (several lines in console format)", name)
	}
	if lines[0]["level"] != level {
		t.Errorf("%s: the line is at level %v, want %s: %q", name, lines[0]["level"], level, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: line %q does not say %q", name, msg, w)
		}
	}
}

// flavors runs f once per server implementation (Redis, Valkey).
func flavors(t *testing.T, f func(t *testing.T, fl testredis.Flavor)) {
	for _, fl := range testredis.Flavors() {
		t.Run(string(fl), func(t *testing.T) { f(t, fl) })
	}
}

// waitHTTP polls url until it answers code with a body containing want.
func waitHTTP(t *testing.T, url string, code int, want string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, body := get(url)
		if got == code && strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %q after a minute; want %d with %q", url, got, body, code, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestEvictionPolicyRefused: against a server with maxmemory-policy
// allkeys-lru the consumer, the replayer and the read API each exit with
// code 2 and one error line naming the server, the policy and the key that
// accepts it.
func TestEvictionPolicyRefused(t *testing.T) { flavors(t, testEvictionPolicyRefused) }

func testEvictionPolicyRefused(t *testing.T, fl testredis.Flavor) {
	srv := testredis.StartStandalone(t, testredis.WithFlavor(fl), testredis.WithArgs("--maxmemory-policy", "allkeys-lru"))
	env := []string{"PROJECTOR_REDIS_ADDRS=" + srv.Addr(), "PROJECTOR_KAFKA_BROKERS=127.0.0.1:1",
		"PROJECTOR_HTTP_ADDR=127.0.0.1:0", "PROJECTOR_LOG_FORMAT=json"}
	for _, bin := range []string{consumerBin, replayerBin, apiBin} {
		p := startProcess(t, bin, env)
		name := filepath.Base(bin)
		if code := p.exitCode(t, time.Minute); code != 2 {
			t.Fatalf("%s: exit code %d, want 2:\n%s", name, code, tail(p.log.String(), 3000))
		}
		assertOneLine(t, name, p.log.String(), "error", refusalLine(srv.Addr(), "allkeys-lru"))
	}
}

// TestEvictionPolicyRefusedOnceRedisIsUp: a consumer started while Redis is
// down waits for it, and refuses when it comes up with an evicting policy.
func TestEvictionPolicyRefusedOnceRedisIsUp(t *testing.T) {
	flavors(t, testEvictionPolicyRefusedOnceUp)
}

func testEvictionPolicyRefusedOnceUp(t *testing.T, fl testredis.Flavor) {
	srv := testredis.StartStandalone(t, testredis.WithFlavor(fl), testredis.WithArgs("--maxmemory-policy", "volatile-ttl"))
	srv.Stop()
	httpAddr := freeAddr(t)
	p := startConsumer(t, []string{"PROJECTOR_REDIS_ADDRS=" + srv.Addr(), "PROJECTOR_KAFKA_BROKERS=127.0.0.1:1",
		"PROJECTOR_HTTP_ADDR=" + httpAddr, "PROJECTOR_LOG_FORMAT=json"})
	waitHTTP(t, "http://"+httpAddr+"/readyz", http.StatusServiceUnavailable, "redis unreachable")
	srv.Restart(t)
	if code := p.exitCode(t, time.Minute); code != 2 {
		t.Fatalf("exit code %d, want 2:\n%s", code, tail(p.log.String(), 3000))
	}
	assertOneLine(t, "consumer", p.log.String(), "error", refusalLine(srv.Addr(), "volatile-ttl"))
}

// TestEvictionPolicyAccepted: with redis.allow_eviction=true the consumer and
// the read API start against allkeys-lru, say so in one warning line and
// show projector_redis_eviction_policy_accepted 1.
func TestEvictionPolicyAccepted(t *testing.T) { flavors(t, testEvictionPolicyAccepted) }

func testEvictionPolicyAccepted(t *testing.T, fl testredis.Flavor) {
	srv := testredis.StartStandalone(t, testredis.WithFlavor(fl), testredis.WithArgs("--maxmemory-policy", "allkeys-lru"))
	brokers := startKafka(t, 1, []string{"shop.views", "shop.clicks", "shop.orders"}, "shop.dlq")
	for _, bin := range []string{consumerBin, apiBin} {
		httpAddr := freeAddr(t)
		p := startProcess(t, bin, []string{"PROJECTOR_REDIS_ADDRS=" + srv.Addr(), "PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
			"PROJECTOR_HTTP_ADDR=" + httpAddr, "PROJECTOR_LOG_FORMAT=json", "PROJECTOR_REDIS_ALLOW_EVICTION=true"})
		waitHTTP(t, "http://"+httpAddr+"/readyz", http.StatusOK, "ready")
		waitHTTP(t, "http://"+httpAddr+"/metrics", http.StatusOK, "\nprojector_redis_eviction_policy_accepted 1\n")
		p.term(t)
		assertOneLine(t, filepath.Base(bin), p.log.String(), "warn",
			"redis "+srv.Addr()+": maxmemory-policy is allkeys-lru", "accepted by redis.allow_eviction=true")
	}
}

// TestEvictionPolicyUnchecked: a server that refuses CONFIG GET (the command
// renamed away, or an ACL user without +config) cannot be checked: the
// consumer says so in one warning line, starts and becomes ready, with
// projector_redis_eviction_policy_accepted 0.
func TestEvictionPolicyUnchecked(t *testing.T) { flavors(t, testEvictionPolicyUnchecked) }

func testEvictionPolicyUnchecked(t *testing.T, fl testredis.Flavor) {
	ctx := context.Background()
	renamed := testredis.StartStandalone(t, testredis.WithFlavor(fl),
		testredis.WithArgs("--rename-command", "CONFIG", "", "--maxmemory-policy", "allkeys-lru"))
	acl := testredis.StartStandalone(t, testredis.WithFlavor(fl), testredis.WithArgs("--maxmemory-policy", "allkeys-lru"))
	if err := acl.Client().Do(ctx, "ACL", "SETUSER", "app", "on", ">app-pw", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	brokers := startKafka(t, 1, []string{"shop.views", "shop.clicks", "shop.orders"}, "shop.dlq")
	for name, env := range map[string][]string{
		"renamed": {"PROJECTOR_REDIS_ADDRS=" + renamed.Addr()},
		"acl":     {"PROJECTOR_REDIS_ADDRS=" + acl.Addr(), "PROJECTOR_REDIS_USERNAME=app", "PROJECTOR_REDIS_PASSWORD=app-pw"},
	} {
		httpAddr := freeAddr(t)
		p := startConsumer(t, append(env, "PROJECTOR_KAFKA_BROKERS="+strings.Join(brokers, ","), "PROJECTOR_KAFKA_GROUP_ID="+name,
			"PROJECTOR_HTTP_ADDR="+httpAddr, "PROJECTOR_LOG_FORMAT=json"))
		waitHTTP(t, "http://"+httpAddr+"/readyz", http.StatusOK, "ready")
		waitHTTP(t, "http://"+httpAddr+"/metrics", http.StatusOK, "\nprojector_redis_eviction_policy_accepted 0\n")
		p.term(t)
		assertOneLine(t, name, p.log.String(), "warn", "could not check maxmemory-policy (CONFIG GET refused)")
	}
}
