package apply

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"projector/internal/testing/testredis"
)

// BenchmarkLuaCosts measures on a real redis-server the building blocks of
// the apply script's cost to Redis (BENCHMARKS.md, the price of Lua): a command
// called from Lua (redis.call) against the same command sent directly, one
// script argument, and one call of a script (EVALSHA) against one of a Redis
// Function with the same body (FCALL). redis-us/op is Redis's CPU (INFO cpu)
// per call or argument.
func BenchmarkLuaCosts(b *testing.B) {
	ctx := context.Background()
	srv := testredis.StartStandalone(b)
	rdb := srv.Client()
	const loop = 1000
	calls := redis.NewScript(fmt.Sprintf("for i = 1, %d do redis.call(ARGV[1], KEYS[1], 1) end return 1", loop))
	args := redis.NewScript("return 1")
	measure := func(b *testing.B, per int, run func()) {
		cpu0 := redisCPU(b, srv)
		b.ResetTimer()
		run()
		b.StopTimer()
		b.ReportMetric(1e6*(redisCPU(b, srv)-cpu0)/float64(b.N*per), "redis-us/op")
	}
	b.Run("incrby-from-lua", func(b *testing.B) {
		measure(b, loop, func() {
			for range b.N {
				if err := calls.Run(ctx, rdb, []string{"k"}, "INCRBY").Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("incrby-direct", func(b *testing.B) {
		measure(b, loop, func() {
			for range b.N {
				pipe := rdb.Pipeline()
				for range loop {
					pipe.IncrBy(ctx, "k", 1)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	// a call with twenty arguments, as a user's apply call has, pipelined
	body := "local n = 0 for i = 1, #ARGV do n = n + #ARGV[i] end return n"
	callArgs := make([]any, 20)
	for i := range callArgs {
		callArgs[i] = fmt.Sprintf("st:{u:user%d}:views", i)
	}
	if err := rdb.FunctionLoadReplace(ctx, "#!lua name=pxbench\nredis.register_function('pxbench', function(KEYS, ARGV) "+body+" end)").Err(); err != nil {
		b.Fatal(err)
	}
	sha, err := rdb.ScriptLoad(ctx, body).Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, call := range []struct {
		name string
		cmd  func(redis.Pipeliner, int) *redis.Cmd
	}{
		{"call-evalsha", func(p redis.Pipeliner, i int) *redis.Cmd { return p.EvalSha(ctx, sha, []string{"k"}, callArgs...) }},
		{"call-fcall", func(p redis.Pipeliner, i int) *redis.Cmd { return p.FCall(ctx, "pxbench", []string{"k"}, callArgs...) }},
	} {
		b.Run(call.name, func(b *testing.B) {
			measure(b, loop, func() {
				for range b.N {
					pipe := rdb.Pipeline()
					for i := range loop {
						call.cmd(pipe, i)
					}
					if _, err := pipe.Exec(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
	b.Run("script-argument", func(b *testing.B) {
		argv := make([]any, loop)
		for i := range argv {
			argv[i] = fmt.Sprintf("st:{u:user%d}:views:2026-12-02T08", i)
		}
		measure(b, loop, func() {
			for range b.N {
				if err := args.Run(ctx, rdb, []string{"k"}, argv...).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
