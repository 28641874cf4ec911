package wire

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// applyBody is the apply script: the guards and the write program of one
// slot (or of several users of a standalone server); sealBody the seal
// script, which raises each master's own watermarks.
var (
	//go:embed apply.lua
	applyBody string
	//go:embed seal.lua
	sealBody string
)

// Script is a Lua script of the protocol: luaHeader() followed by its body.
// Every call goes through start and exec.
type Script struct {
	Src string
	SHA string
}

// NewScript returns the script made of the protocol's header and body.
func NewScript(body string) *Script {
	src := luaHeader() + body
	sum := sha1.Sum([]byte(src))
	return &Script{Src: src, SHA: hex.EncodeToString(sum[:])}
}

// ApplyScript returns the apply script (guard + write program for one slot).
func ApplyScript() *Script { return NewScript(applyBody) }

// SealScript returns the seal script.
func SealScript() *Script { return NewScript(sealBody) }

// Start begins the command of one call of s: EVALSHA, the hash and the keys
// (strings or *string), with room for n arguments that the caller appends.
// The slice is sent as it is (go-redis writes *string and *int64 arguments
// without boxing them), so its pointers must stay valid until exec returns.
func (s *Script) Start(n int, keys ...any) []any {
	args := make([]any, 0, 3+len(keys)+n)
	args = append(args, "evalsha", s.SHA, len(keys))
	return append(args, keys...)
}

// Load loads s on rdb's server, or on every server of a Redis Cluster.
func (s *Script) Load(ctx context.Context, rdb redis.UniversalClient) error {
	if err := rdb.ScriptLoad(ctx, s.Src).Err(); err != nil {
		return fmt.Errorf("load apply script: %w", err)
	}
	return nil
}

// Exec sends the calls (each begun by Start) in one pipeline on c and
// returns their commands, in order. more, when not nil, queues commands that
// follow the calls in the pipeline (WAIT). A call answered NOSCRIPT (the
// server restarted, was flushed or failed over since the script was loaded)
// is sent again, with more, as EVAL of the source, which loads it there.
func (s *Script) Exec(ctx context.Context, c redis.UniversalClient, calls [][]any, more func(redis.Pipeliner)) []*redis.Cmd {
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
				calls[i][0], calls[i][1] = "eval", s.Src
				again = append(again, i)
			}
		}
		pending = again
	}
	return cmds
}

// Run sends one call of s and decodes its reply (n markers or ranges).
func (s *Script) Run(ctx context.Context, c redis.UniversalClient, call []any, n int) (Reply, error) {
	return ReplyOf(s.Exec(ctx, c, [][]any{call}, nil)[0], n)
}

// ReplyOf decodes the reply of cmd, a call with n markers or ranges.
func ReplyOf(cmd *redis.Cmd, n int) (Reply, error) {
	vals, err := cmd.Slice()
	if err != nil {
		return Reply{}, err
	}
	return DecodeReply(vals, n)
}

// isNoScript reports whether err says the script is not loaded on a server.
func isNoScript(err error) bool { return redis.HasErrorPrefix(err, "NOSCRIPT") }
