package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"projector/internal/config"
	"projector/internal/testing/testredis"
)

// TestCheckWait: redis.wait.aof stops start-up (a *config.KeyError naming
// the key, exit code 2) on a server without WAITAOF (Redis 7.0) or without
// appendonly, and passes on Valkey with the AOF on.
func TestCheckWait(t *testing.T) {
	ctx := context.Background()
	aof := config.WaitConfig{AOF: true, Timeout: time.Second}
	for name, tc := range map[string]struct {
		opts []testredis.Option
		ok   bool
	}{
		"redis 7.0":             {nil, false},
		"valkey, no appendonly": {[]testredis.Option{testredis.WithValkey()}, false},
		"valkey, appendonly":    {[]testredis.Option{testredis.WithValkey(), testredis.WithAOF()}, true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := testredis.StartStandalone(t, tc.opts...)
			err := checkWait(ctx, srv.Client(), aof, zap.NewNop())
			var ke *config.KeyError
			if tc.ok != (err == nil) || (!tc.ok && (!errors.As(err, &ke) || ke.Key != "redis.wait.aof")) {
				t.Fatalf("checkWait = %v, want ok %v (else a KeyError for redis.wait.aof)", err, tc.ok)
			}
		})
	}
	srv := testredis.StartStandalone(t)
	if err := checkWait(ctx, srv.Client(), config.WaitConfig{Replicas: 1, Timeout: time.Second}, zap.NewNop()); err != nil {
		t.Fatalf("redis.wait.replicas without replicas is a warning, got %v", err)
	}
}

// TestCheckWaitACL: a Redis user refused WAIT stops start-up with a
// *config.KeyError for redis.wait.replicas saying so; one refused only INFO
// starts, with one warning that the count of replicas is skipped.
func TestCheckWaitACL(t *testing.T) {
	ctx := context.Background()
	srv := testredis.StartStandalone(t)
	user := func(name string, rules ...any) *redis.Client {
		args := append([]any{"ACL", "SETUSER", name, "on", ">pw", "~*", "+@all"}, rules...)
		if err := srv.Client().Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: name, Password: "pw"})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	replicas := config.WaitConfig{Replicas: 1, Timeout: time.Second}
	err := checkWait(ctx, user("nowait", "-wait"), replicas, zap.NewNop())
	var ke *config.KeyError
	if !errors.As(err, &ke) || ke.Key != "redis.wait.replicas" || !strings.Contains(ke.Msg, "refused WAIT") {
		t.Errorf("user without WAIT: checkWait = %v, want a KeyError for redis.wait.replicas saying WAIT was refused", err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	if err := checkWait(ctx, user("noinfo", "-info"), replicas, zap.New(core)); err != nil {
		t.Errorf("user without INFO: checkWait = %v, want nil", err)
	}
	if n := logs.FilterMessageSnippet("redis refused INFO").Len(); n != 1 {
		t.Errorf("%d warnings about INFO, want one: %v", n, logs.All())
	}
}
