package testredis

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStandaloneSetGet(t *testing.T) {
	s := StartStandalone(t)
	ctx := context.Background()
	c := s.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("GET k = %q, %v; want \"v\"", got, err)
	}
	host, _, err := net.SplitHostPort(s.Addr())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr() = %q, want 127.0.0.1:<port>", s.Addr())
	}
	cfg, err := c.ConfigGet(ctx, "appendonly").Result()
	if err != nil || cfg["appendonly"] != "no" {
		t.Fatalf("appendonly = %v, %v; want no", cfg, err)
	}
}

func TestPauseResume(t *testing.T) {
	s := StartStandalone(t)
	ctx := context.Background()
	// A dedicated client with a short read timeout and no retries.
	c := redis.NewClient(&redis.Options{
		Addr:            s.Addr(),
		ReadTimeout:     300 * time.Millisecond,
		WriteTimeout:    300 * time.Millisecond,
		MaxRetries:      -1,
		DisableIdentity: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING before pause: %v", err)
	}

	s.Pause()
	err := c.Set(ctx, "k", "v", 0).Err()
	var netErr net.Error
	if err == nil || !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("SET while paused: err = %v, want a timeout", err)
	}

	s.Resume()
	// The server's own client has default timeouts, so a loaded machine
	// does not make this step flaky.
	if err := s.Client().Set(ctx, "k2", "v2", 0).Err(); err != nil {
		t.Fatalf("SET after resume: %v", err)
	}
	if got, err := s.Client().Get(ctx, "k2").Result(); err != nil || got != "v2" {
		t.Fatalf("GET k2 after resume = %q, %v", got, err)
	}
}

func TestRestartWithAOFKeepsData(t *testing.T) {
	s := StartStandalone(t, WithAOF())
	ctx := context.Background()
	addr := s.Addr()
	if err := s.Client().Set(ctx, "durable", "yes", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	s.Stop()
	if err := s.Client().Ping(ctx).Err(); err == nil {
		t.Fatal("PING after Stop succeeded; server still running")
	}
	s.Restart(t)
	if s.Addr() != addr {
		t.Fatalf("Addr after restart = %s, want %s", s.Addr(), addr)
	}
	got, err := s.Client().Get(ctx, "durable").Result()
	if err != nil || got != "yes" {
		t.Fatalf("GET durable after restart = %q, %v; want \"yes\"", got, err)
	}
}

func TestRestartWithoutAOFLosesData(t *testing.T) {
	s := StartStandalone(t)
	ctx := context.Background()
	if err := s.Client().Set(ctx, "volatile", "x", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	s.Kill()
	s.Restart(t)
	if err := s.Client().Get(ctx, "volatile").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET volatile after kill+restart without persistence: err = %v, want redis.Nil", err)
	}
}

func TestFreePortsCluster(t *testing.T) {
	ports, err := freePorts(5, true)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || p >= maxClusterPort {
			t.Errorf("port %d outside 1..%d", p, maxClusterPort-1)
		}
		if seen[p] {
			t.Errorf("port %d chosen twice", p)
		}
		seen[p] = true
	}
}
