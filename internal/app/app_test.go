package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"projector/internal/config"
	"projector/internal/obs"
	"projector/internal/redischeck"
	"projector/internal/testing/testredis"
)

// While Redis refuses writes for OOM, WaitRedis retries and readiness names
// the OOM; once maxmemory is raised it returns.
func TestWaitRedisNamesOOM(t *testing.T) {
	srv := testredis.StartStandalone(t, testredis.WithArgs("--maxmemory", "1", "--maxmemory-policy", "noeviction"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	health := obs.NewHealth(nil)
	done := make(chan error, 1)
	go func() {
		done <- WaitRedis(ctx, zap.NewNop(), health, func(ctx context.Context) error {
			return srv.Client().Set(ctx, "k", "v", 0).Err()
		})
	}()
	for {
		if _, reason := health.Ready(); strings.Contains(reason, "out of memory") && strings.Contains(reason, "OOM") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("WaitRedis returned %v while Redis is out of memory", err)
		case <-ctx.Done():
			_, reason := health.Ready()
			t.Fatalf("readiness never named the OOM: %q", reason)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := srv.Client().ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitRedis after maxmemory was raised: %v", err)
	}
}

// A refusal to start and a configuration the server cannot do are
// returned at once, not retried.
func TestWaitRedisReturnsRefusal(t *testing.T) {
	refusal := &redischeck.EvictionError{Servers: []redischeck.Server{{Addr: "r:1", Policy: "allkeys-lru"}}}
	for _, want := range []error{refusal, &config.KeyError{Key: "redis.wait.aof", Msg: "cannot WAITAOF"}} {
		calls := 0
		err := WaitRedis(context.Background(), zap.NewNop(), obs.NewHealth(nil), func(context.Context) error {
			calls++
			return fmt.Errorf("start-up: %w", want)
		})
		if !errors.Is(err, want) || calls != 1 {
			t.Fatalf("err %v after %d calls; want %v after one", err, calls, want)
		}
	}
	if !ExitRefused(zap.NewNop(), refusal) || ExitRefused(zap.NewNop(), errors.New("other")) {
		t.Fatal("ExitRefused does not tell the refusal from another error")
	}
}
