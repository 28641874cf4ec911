package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"

	"projector/internal/config"
	"projector/internal/testredis"
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
