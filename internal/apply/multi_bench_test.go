package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// applyMultiProbe is BenchmarkLevers' probe of MULTI/EXEC instead of the
// script, the cheapest form it can take: a first
// round trip WATCHes the batch's marker hashes and the watermark hash and
// reads the markers (HMGET per hash) and the watermarks; the second is one
// MULTI/EXEC that sets the missing markers (HSET, PEXPIREAT per hash), the
// watermarks, and the writes of the records without a marker as the peer
// sends them (applyPeer: unconditional trims, no guard reads, no expiry
// checks). It prices the guard in MULTI/EXEC; it is not a full apply (the
// script's conditional writes would need more reads in the first round trip).
func applyMultiProbe(ctx context.Context, a *Applier, rdb *redis.Client, recs []Record, rng []Range) error {
	return multiProbe(ctx, a, rdb, recs, rng, false)
}

// applyMultiCoalesced is applyMultiProbe with the writes coalesced as the
// script path coalesces them (per user, and the batch's global writes in
// one group), and the guard keys of the ZAddMax writes read (GET) and
// WATCHed in the first round trip: the floor of a MULTI/EXEC apply.
func applyMultiCoalesced(ctx context.Context, a *Applier, rdb *redis.Client, recs []Record, rng []Range) error {
	return multiProbe(ctx, a, rdb, recs, rng, true)
}

// multiProbe is applyMultiProbe, with coalesce applyMultiCoalesced.
func multiProbe(ctx context.Context, a *Applier, rdb *redis.Client, recs []Record, rng []Range, coalesce bool) error {
	now := a.opts.Now()
	items := make([]item, len(recs))
	byHash := map[string][]*item{}
	var hashes []string
	for i := range recs {
		it := &items[i]
		a.describe(it, i, &recs[i], now)
		if _, ok := byHash[it.marker]; !ok {
			hashes = append(hashes, it.marker)
		}
		byHash[it.marker] = append(byHash[it.marker], it)
	}
	wmKey := a.keys.Watermarks()
	field := rng[0].TP().String()
	guards := map[string]bool{}
	planned := make([][]projections.Write, len(recs))
	for i := range recs {
		planned[i] = a.planner.Plan(recs[i].Event, now, nil)
		for _, w := range planned[i] {
			if coalesce && w.Guard != "" {
				guards[w.Guard] = true
			}
		}
	}
	watch := append([]string{wmKey}, hashes...)
	for g := range guards {
		watch = append(watch, g)
	}
	return rdb.Watch(ctx, func(tx *redis.Tx) error {
		reads := make([]*redis.SliceCmd, len(hashes))
		var wm *redis.StringCmd
		if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, h := range hashes {
				ids := make([]string, len(byHash[h]))
				for j, it := range byHash[h] {
					ids[j] = it.rec.Event.ID
				}
				reads[i] = p.HMGet(ctx, h, ids...)
			}
			wm = p.HGet(ctx, wmKey, field)
			for g := range guards {
				p.Get(ctx, g)
			}
			return nil
		}); err != nil && err != redis.Nil {
			return fmt.Errorf("read markers: %w", err)
		}
		_ = wm.Val()
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			user := map[string][]projections.Write{}
			var order []string
			var global []projections.Write
			for i, h := range hashes {
				vals := reads[i].Val()
				for j, it := range byHash[h] {
					if vals[j] != nil {
						continue
					}
					p.HSet(ctx, h, it.rec.Event.ID, it.origin)
					for _, w := range planned[it.idx] {
						switch {
						case !coalesce:
							peerWrite(ctx, p, &w)
						case w.Global:
							global = append(global, w)
						default:
							u := it.rec.Event.UserID
							if _, ok := user[u]; !ok {
								order = append(order, u)
							}
							user[u] = append(user[u], w)
						}
					}
				}
				p.PExpireAt(ctx, h, time.UnixMilli(byHash[h][0].markerExp))
			}
			for _, u := range order {
				global = append(global, Coalesce(user[u])...)
			}
			for _, w := range Coalesce(global) {
				peerWrite(ctx, p, &w)
			}
			p.HSet(ctx, wmKey, field, rng[0].Last)
			return nil
		})
		if err != nil {
			return fmt.Errorf("multi/exec: %w", err)
		}
		return nil
	}, watch...)
}

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
	lib := "#!lua name=pxapply\nredis.register_function('pxapply', function(KEYS, ARGV)\n" + a.script.src + "\nend)"
	if err := rdb.FunctionLoadReplace(ctx, lib).Err(); err != nil {
		return fmt.Errorf("function load: %w", err)
	}
	rdb.AddHook(fcallHook{sha: a.script.sha, fn: "pxapply"})
	a.rdb = rdb
	return nil
}
