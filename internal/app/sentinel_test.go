package app

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"projector/internal/config"
	"projector/internal/obs"
	"projector/internal/testing/testredis"
)

const sentinelPassword = "Sentinel-pa55-for-tests"

// sentinelEnv is the configuration of a consumer in front of s.
func sentinelEnv(s *testredis.Sentinels, addrs ...string) []string {
	if addrs == nil {
		addrs = s.Addrs()
	}
	return []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=" + strings.Join(addrs, ","),
		"PROJECTOR_REDIS_SENTINEL_MASTER_NAME=" + s.MasterName(), "PROJECTOR_REDIS_SENTINEL_PASSWORD=" + sentinelPassword}
}

// refusedAddr returns a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestSentinelMode: behind Sentinels that require a password, the clients
// of NewRedis and NewReplicaRedis reach the master and the replica, also
// with one Sentinel address refused; the start-up check finds the master
// and checks the replica's eviction policy too; a master name no Sentinel
// knows is a KeyError naming redis.sentinel.master_name; a wrong Sentinel
// password stops start-up with one line naming the keys, never the
// password.
func TestSentinelMode(t *testing.T) {
	s := testredis.StartSentinel(t, 1, testredis.WithSentinelPassword(sentinelPassword))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	master, replica := s.Nodes()[0], s.Nodes()[1]

	cfg := loadConfig(t, append(sentinelEnv(s, refusedAddr(t), s.Addrs()[0], s.Addrs()[1]), "PROJECTOR_REDIS_READ_FROM=replicas")...)
	rdb := NewRedis(cfg.Redis)
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the Sentinels (one of three refused): %v", err)
	}
	if v, err := master.Client().Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("the write is not on the master %s: %q, %v", master.Addr(), v, err)
	}
	rep := NewReplicaRedis(cfg.Redis)
	defer rep.Close()
	info, err := rep.Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "role:slave") {
		t.Fatalf("NewReplicaRedis reads from %q, %v; want the replica", info, err)
	}
	if NewReplicaRedis(loadConfig(t, sentinelEnv(s)...).Redis) != nil {
		t.Fatal("NewReplicaRedis with read_from master: want nil")
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(replica.Client().ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	accepted := obs.NewEvictionPolicyAccepted()
	err = PolicyCheck(cfg.Redis, rdb, accepted, zap.NewNop())(ctx)
	if err == nil || !strings.Contains(err.Error(), replica.Addr()+": maxmemory-policy is allkeys-lru") {
		t.Fatalf("PolicyCheck with an evicting replica: %v; want the refusal naming the replica", err)
	}
	must(replica.Client().ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	must(master.Client().ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
	err = PolicyCheck(cfg.Redis, rdb, accepted, zap.NewNop())(ctx)
	if err == nil || !strings.Contains(err.Error(), master.Addr()+": maxmemory-policy is volatile-lru") {
		t.Fatalf("PolicyCheck with an evicting master: %v; want the refusal naming the master by its address", err)
	}
	must(master.Client().ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	must(PolicyCheck(cfg.Redis, rdb, accepted, zap.NewNop())(ctx))

	wrong := loadConfig(t, append([]string{"PROJECTOR_REDIS_SENTINEL_MASTER_NAME=nosuchmaster"}, sentinelEnv(s)...)...)
	err = WaitRedis(ctx, zap.NewNop(), obs.NewHealth(nil), PolicyCheck(wrong.Redis, NewRedis(wrong.Redis), accepted, zap.NewNop()))
	var ke *config.KeyError
	if !errors.As(err, &ke) || ke.Key != "redis.sentinel.master_name" || !strings.Contains(ke.Error(), `"nosuchmaster"`) {
		t.Fatalf("a master name no Sentinel knows: %v; want a KeyError for redis.sentinel.master_name", err)
	}
	if err := CheckSentinels(ctx, wrong.Redis); !errors.As(err, &ke) {
		t.Fatalf("CheckSentinels with a wrong name: %v", err)
	}
	if strings.Contains(ke.Error(), "\n") {
		t.Fatalf("not one line: %q", ke.Error())
	}

	bad := loadConfig(t, append([]string{"PROJECTOR_REDIS_SENTINEL_PASSWORD=wrong-" + sentinelPassword}, sentinelEnv(s)...)...)
	err = WaitRedis(ctx, zap.NewNop(), obs.NewHealth(nil), PolicyCheck(bad.Redis, NewRedis(bad.Redis), accepted, zap.NewNop()))
	if err == nil || !strings.Contains(err.Error(), "redis.sentinel.password") || strings.Contains(err.Error(), sentinelPassword) {
		t.Fatalf("a wrong Sentinel password: %v; want one line naming redis.sentinel.password, never the password", err)
	}

	gone := loadConfig(t, append([]string{"PROJECTOR_REDIS_ADDRS=" + refusedAddr(t)}, sentinelEnv(s)...)...)
	health := obs.NewHealth(nil)
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- WaitRedis(wctx, zap.NewNop(), health, PolicyCheck(gone.Redis, NewRedis(gone.Redis), accepted, zap.NewNop()))
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ok, reason := health.Ready()
		if !ok && strings.Contains(reason, "no Sentinel of redis.addrs answered") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readiness while no Sentinel answers: %v %q", ok, reason)
		}
	}
	wcancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("no Sentinel answering: %v; want a wait until the context ends", err)
	}
}

// TestTrackMaster: the first connection's master is only logged; each
// connection to another address counts one change and logs a warning.
func TestTrackMaster(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	changes := prometheus.NewCounter(prometheus.CounterOpts{Name: "changes"})
	tr := &masterTracker{name: "shop", changes: changes, log: zap.New(core)}
	for _, a := range []string{"10.0.0.1:6379", "10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.2:6379", "10.0.0.1:6379"} {
		tr.seen(a)
	}
	if n := testutil.ToFloat64(changes); n != 2 {
		t.Fatalf("changes = %v, want 2", n)
	}
	if w := logs.FilterMessageSnippet("redis master changed").Len(); w != 2 || logs.Len() != 3 {
		t.Fatalf("%d change warnings of %d lines, want 2 of 3: %v", w, logs.Len(), logs.All())
	}
}

// TestSentinelDialNamesTheMaster: a failed connection through the
// Sentinels says which master it tried to reach, and why.
func TestSentinelDialNamesTheMaster(t *testing.T) {
	h := sentinelDial{master: "shop", sentinels: []string{"s1:26379"}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("dial tcp 10.0.0.1:6379: connect: connection refused"), `redis master "shop", as the Sentinels name it, does not answer`},
		{errors.New("redis: all sentinels specified in configuration are unreachable: i/o timeout"), `no Sentinel of redis.addrs (s1:26379) named the master "shop"`},
		{context.Canceled, "context canceled"},
	} {
		if got := h.explain(tc.err).Error(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("explain(%v) = %q, want it to start with %q", tc.err, got, tc.want)
		}
	}
}

// addrConn is a connection that only has a remote address.
type addrConn struct {
	net.Conn
	addr string
}

func (c addrConn) RemoteAddr() net.Addr { return fakeAddr(c.addr) }

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

// TestMasterFence: commands and pipelines fail when the client connected
// to another master while they ran or shortly before they started, and
// pass again once the window is over; the first master is no change.
func TestMasterFence(t *testing.T) {
	now := time.Unix(1000, 0)
	f := &masterFence{window: 2 * time.Second, now: func() time.Time { return now }}
	dial := func(addr string) {
		t.Helper()
		d := f.DialHook(func(context.Context, string, string) (net.Conn, error) { return addrConn{addr: addr}, nil })
		if _, err := d(context.Background(), "tcp", "FailoverClient"); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	run := func(during func()) error {
		cmd := redis.NewStatusCmd(ctx, "set", "k", "v")
		return f.ProcessHook(func(context.Context, redis.Cmder) error { during(); return nil })(ctx, cmd)
	}
	pipe := func() []redis.Cmder {
		cmds := []redis.Cmder{redis.NewStatusCmd(ctx, "multi"), redis.NewStatusCmd(ctx, "set", "k", "v"), redis.NewStatusCmd(ctx, "exec")}
		_ = f.ProcessPipelineHook(func(context.Context, []redis.Cmder) error { return nil })(ctx, cmds)
		return cmds
	}
	dial("10.0.0.1:6379")
	if err := run(func() {}); err != nil {
		t.Fatalf("after the first connection: %v", err)
	}
	if err := run(func() { now = now.Add(time.Second); dial("10.0.0.2:6379") }); err == nil || !strings.Contains(err.Error(), "redis master changed to 10.0.0.2:6379") {
		t.Fatalf("a command that ran while the master changed: %v", err)
	}
	now = now.Add(1500 * time.Millisecond)
	if cmds := pipe(); cmds[1].Err() == nil {
		t.Fatal("a pipeline 1.5 s after the change passed")
	}
	now = now.Add(time.Second)
	if err := run(func() {}); err != nil {
		t.Fatalf("2.5 s after the change: %v", err)
	}
	if cmds := pipe(); cmds[1].Err() != nil {
		t.Fatalf("a pipeline 2.5 s after the change: %v", cmds[1].Err())
	}
	dial("10.0.0.2:6379")
	if err := run(func() {}); err != nil {
		t.Fatalf("another connection to the same master: %v", err)
	}
}
