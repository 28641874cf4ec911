package redischeck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"projector/internal/testing/testredis"
)

// observed returns a logger and the warnings it records.
func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.WarnLevel)
	return zap.New(core), logs
}

// client returns a client of srv closed at the end of the test.
func client(t *testing.T, addr string, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: addr, DisableIdentity: true}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// flavors runs f once per server implementation (Redis, Valkey).
func flavors(t *testing.T, f func(t *testing.T, fl testredis.Flavor)) {
	for _, fl := range testredis.Flavors() {
		t.Run(string(fl), func(t *testing.T) { f(t, fl) })
	}
}

func TestPolicies(t *testing.T) { flavors(t, testPolicies) }

func testPolicies(t *testing.T, fl testredis.Flavor) {
	srv := testredis.StartStandalone(t, testredis.WithFlavor(fl))
	ctx := context.Background()
	for _, tc := range []struct {
		policy       string
		allow        bool
		wantRefusal  bool
		wantAccepted bool
	}{
		{policy: "noeviction"},
		{policy: "noeviction", allow: true},
		{policy: "allkeys-lru", wantRefusal: true},
		{policy: "allkeys-lfu", wantRefusal: true},
		{policy: "allkeys-random", wantRefusal: true},
		{policy: "volatile-lru", wantRefusal: true},
		{policy: "volatile-lfu", wantRefusal: true},
		{policy: "volatile-random", wantRefusal: true},
		{policy: "volatile-ttl", wantRefusal: true},
		{policy: "allkeys-lru", allow: true, wantAccepted: true},
		{policy: "volatile-ttl", allow: true, wantAccepted: true},
	} {
		if err := srv.Client().ConfigSet(ctx, "maxmemory-policy", tc.policy).Err(); err != nil {
			t.Fatal(err)
		}
		log, logs := observed()
		accepted, err := Check(ctx, srv.Client(), tc.allow, log)
		var ee *EvictionError
		if got := errors.As(err, &ee); got != tc.wantRefusal {
			t.Fatalf("%s allow=%v: err %v, want refusal %v", tc.policy, tc.allow, err, tc.wantRefusal)
		}
		if accepted != tc.wantAccepted {
			t.Fatalf("%s allow=%v: accepted %v, want %v", tc.policy, tc.allow, accepted, tc.wantAccepted)
		}
		if tc.wantRefusal {
			want := "redis " + srv.Addr() + ": maxmemory-policy is " + tc.policy + ": evicting keys would drop projections and idempotency markers (set it to noeviction, or accept it with redis.allow_eviction=true)"
			if err.Error() != want {
				t.Fatalf("refusal\n got %q\nwant %q", err.Error(), want)
			}
		}
		wantWarnings := 0
		if tc.wantAccepted {
			wantWarnings = 1
		}
		if logs.Len() != wantWarnings {
			t.Fatalf("%s allow=%v: %d warnings, want %d: %v", tc.policy, tc.allow, logs.Len(), wantWarnings, logs.All())
		}
		if tc.wantAccepted {
			msg := logs.All()[0].Message
			for _, want := range []string{srv.Addr(), "maxmemory-policy is " + tc.policy, "redis.allow_eviction=true"} {
				if !strings.Contains(msg, want) {
					t.Fatalf("warning %q does not name %q", msg, want)
				}
			}
		}
	}
}

// A server that refuses CONFIG GET (renamed command, ACL user without
// +config) is one warning line, and the start goes on.
func TestConfigRefused(t *testing.T) { flavors(t, testConfigRefused) }

func testConfigRefused(t *testing.T, fl testredis.Flavor) {
	ctx := context.Background()
	renamed := testredis.StartStandalone(t, testredis.WithFlavor(fl),
		testredis.WithArgs("--rename-command", "CONFIG", "", "--maxmemory-policy", "allkeys-lru"))
	acl := testredis.StartStandalone(t, testredis.WithFlavor(fl), testredis.WithArgs("--maxmemory-policy", "allkeys-lru"))
	if err := acl.Client().Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*redis.Client{
		"renamed": renamed.Client(),
		"acl":     client(t, acl.Addr(), func(o *redis.Options) { o.Username, o.Password = "app", "pw" }),
	} {
		log, logs := observed()
		accepted, err := Check(ctx, c, false, log)
		if err != nil || accepted {
			t.Fatalf("%s: accepted %v, err %v; want a warning and no error", name, accepted, err)
		}
		if logs.Len() != 1 || !strings.Contains(logs.All()[0].Message, "could not check maxmemory-policy") {
			t.Fatalf("%s: want one warning that the policy could not be checked, got %v", name, logs.All())
		}
		fields := logs.All()[0].ContextMap()
		if redisField, _ := fields["redis"].([]any); len(redisField) != 1 || redisField[0] != c.Options().Addr {
			t.Fatalf("%s: warning names %v, want %s", name, fields["redis"], c.Options().Addr)
		}
	}
}

// Refused tells a command refused for good (NOPERM, a command renamed away)
// from other replies, whether wrapped or not.
func TestRefusedCommands(t *testing.T) { flavors(t, testRefusedCommands) }

func testRefusedCommands(t *testing.T, fl testredis.Flavor) {
	ctx := context.Background()
	srv := testredis.StartStandalone(t, testredis.WithFlavor(fl), testredis.WithArgs("--rename-command", "WAIT", ""))
	if err := srv.Client().Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	app := client(t, srv.Addr(), func(o *redis.Options) { o.Username, o.Password = "app", "pw" })
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"NOPERM":        {app.ConfigGet(ctx, "maxmemory-policy").Err(), true},
		"NOPERM within": {fmt.Errorf("read: %w", app.ConfigGet(ctx, "maxmemory-policy").Err()), true},
		"renamed":       {srv.Client().Do(ctx, "WAIT", 0, 1).Err(), true},
		"wrong type":    {srv.Client().HGet(ctx, "s", "f").Err(), false},
		"nil":           {nil, false},
	} {
		if name == "wrong type" {
			srv.Client().Set(ctx, "s", "x", 0)
			c.err = srv.Client().HGet(ctx, "s", "f").Err()
		}
		if got := Refused(c.err); got != c.want {
			t.Errorf("%s: Refused(%v) = %v, want %v", name, c.err, got, c.want)
		}
	}
}

// An unreachable server is an error to retry, not a refusal.
func TestUnreachable(t *testing.T) {
	srv := testredis.StartStandalone(t)
	addr := srv.Addr()
	srv.Stop()
	c := client(t, addr, func(o *redis.Options) { o.MaxRetries = -1; o.DialTimeout = time.Second })
	log, logs := observed()
	_, err := Check(context.Background(), c, false, log)
	var ee *EvictionError
	if err == nil || errors.As(err, &ee) || refused(err) {
		t.Fatalf("unreachable server: err %v; want a plain error to retry", err)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %q does not name %s", err, addr)
	}
	if logs.Len() != 0 {
		t.Fatalf("unexpected warnings %v", logs.All())
	}
}

// On Redis Cluster every master is checked: one evicting master of three is
// refused by its address.
func TestClusterMasters(t *testing.T) { flavors(t, testClusterMasters) }

func testClusterMasters(t *testing.T, fl testredis.Flavor) {
	ctx := context.Background()
	cl := testredis.StartCluster(t, 3, testredis.WithFlavor(fl))
	log, logs := observed()
	if accepted, err := Check(ctx, cl.Client(), false, log); err != nil || accepted || logs.Len() != 0 {
		t.Fatalf("noeviction cluster: accepted %v, err %v, warnings %v", accepted, err, logs.All())
	}
	bad := cl.Nodes()[1]
	if err := bad.Client().ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := Check(ctx, cl.Client(), false, log)
	var ee *EvictionError
	if !errors.As(err, &ee) || len(ee.Servers) != 1 || ee.Servers[0] != (Server{Addr: bad.Addr(), Policy: "volatile-lru"}) {
		t.Fatalf("one evicting master: err %v; want a refusal naming %s only", err, bad.Addr())
	}
	accepted, err := Check(ctx, cl.Client(), true, log)
	if err != nil || !accepted || logs.Len() != 1 || !strings.Contains(logs.All()[0].Message, bad.Addr()) {
		t.Fatalf("accepted: %v, err %v, warnings %v", accepted, err, logs.All())
	}
}

func TestOutOfMemory(t *testing.T) { flavors(t, testOutOfMemory) }

func testOutOfMemory(t *testing.T, fl testredis.Flavor) {
	srv := testredis.StartStandalone(t, testredis.WithFlavor(fl), testredis.WithArgs("--maxmemory", "1"))
	err := srv.Client().Set(context.Background(), "k", "v", 0).Err()
	if !OutOfMemory(err) {
		t.Fatalf("SET above maxmemory: err %v, not recognised as OOM", err)
	}
	if OutOfMemory(errors.New("dial tcp: connection refused")) || OutOfMemory(nil) {
		t.Fatal("a connection error or nil is taken for OOM")
	}
}
