package apply

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed apply.lua
var applyBody string

// script is a Lua script of the protocol: luaHeader() followed by its body.
// Every call goes through start and exec.
type script struct {
	src string
	sha string
}

// newScript returns the script made of the protocol's header and body.
func newScript(body string) *script {
	src := luaHeader() + body
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// applyScript returns the apply script (guard + write program for one slot).
func applyScript() *script { return newScript(applyBody) }

// start begins the command of one call of s: EVALSHA, the hash and the keys
// (strings or *string), with room for n arguments that the caller appends.
// The slice is sent as it is (go-redis writes *string and *int64 arguments
// without boxing them), so its pointers must stay valid until exec returns.
func (s *script) start(n int, keys ...any) []any {
	args := make([]any, 0, 3+len(keys)+n)
	args = append(args, "evalsha", s.sha, len(keys))
	return append(args, keys...)
}

// load loads s on rdb's server, or on every server of a Redis Cluster.
func (s *script) load(ctx context.Context, rdb redis.UniversalClient) error {
	if err := rdb.ScriptLoad(ctx, s.src).Err(); err != nil {
		return fmt.Errorf("load apply script: %w", err)
	}
	return nil
}

// exec sends the calls (each begun by start) in one pipeline on c and
// returns their commands, in order. more, when not nil, queues commands that
// follow the calls in the pipeline (WAIT). A call answered NOSCRIPT (the
// server restarted, was flushed or failed over since the script was loaded)
// is sent again, with more, as EVAL of the source, which loads it there.
func (s *script) exec(ctx context.Context, c redis.UniversalClient, calls [][]any, more func(redis.Pipeliner)) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	pending := make([]int, len(calls))
	for i := range pending {
		pending[i] = i
	}
	for len(pending) > 0 {
		pipe := c.Pipeline()
		for _, i := range pending {
			cmds[i] = redis.NewCmd(ctx, calls[i]...)
			if calls[i][2] != 0 {
				cmds[i].SetFirstKeyPos(3)
			}
			_ = pipe.Process(ctx, cmds[i])
		}
		if more != nil {
			more(pipe)
		}
		_, _ = pipe.Exec(ctx)
		var again []int
		for _, i := range pending {
			if isNoScript(cmds[i].Err()) && calls[i][0] == "evalsha" {
				calls[i][0], calls[i][1] = "eval", s.src
				again = append(again, i)
			}
		}
		pending = again
	}
	return cmds
}

// run sends one call of s and decodes its reply (n markers or ranges).
func (s *script) run(ctx context.Context, c redis.UniversalClient, call []any, n int) (reply, error) {
	return replyOf(s.exec(ctx, c, [][]any{call}, nil)[0], n)
}

// replyOf decodes the reply of cmd, a call with n markers or ranges.
func replyOf(cmd *redis.Cmd, n int) (reply, error) {
	vals, err := cmd.Slice()
	if err != nil {
		return reply{}, err
	}
	return decodeReply(vals, n)
}

// isNoScript reports whether err says the script is not loaded on a server.
func isNoScript(err error) bool { return redis.HasErrorPrefix(err, "NOSCRIPT") }
