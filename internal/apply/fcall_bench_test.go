package apply

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// fcallHook turns the apply script's EVALSHA calls into FCALL of the Redis
// Function fn, a library holding the same body (lever b).
type fcallHook struct{ sha, fn string }

func (h fcallHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h fcallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.rewrite(cmd)
		return next(ctx, cmd)
	}
}

func (h fcallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.rewrite(c)
		}
		return next(ctx, cmds)
	}
}

func (h fcallHook) rewrite(cmd redis.Cmder) {
	if a := cmd.Args(); len(a) > 1 && a[0] == "evalsha" && a[1] == h.sha {
		a[0], a[1] = "fcall", h.fn
	}
}

// useFunction makes a apply through a client that calls its apply script
// as a Redis Function, loaded once with FUNCTION LOAD.
func useFunction(ctx context.Context, a *Applier, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	lib := "#!lua name=pxapply\nredis.register_function('pxapply', function(KEYS, ARGV)\n" + a.script.Src + "\nend)"
	if err := rdb.FunctionLoadReplace(ctx, lib).Err(); err != nil {
		return fmt.Errorf("function load: %w", err)
	}
	rdb.AddHook(fcallHook{sha: a.script.SHA, fn: "pxapply"})
	a.rdb = rdb
	return nil
}
