package refmodel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Compare reads every key of rdb (on a cluster, of every master), leaving out
// `<prefix>px:` bookkeeping keys, and returns one readable line per
// difference from want (see Diff). An empty result means equal. A failure to
// read Redis is reported as a difference line too.
func Compare(ctx context.Context, rdb redis.UniversalClient, want State, opts Options, tol time.Duration) []string {
	got, err := Dump(ctx, rdb, opts)
	if err != nil {
		return []string{fmt.Sprintf("cannot read redis: %v", err)}
	}
	return Diff(want, got, opts, tol)
}

// Dump reads every key of rdb except `<prefix>px:` keys into a State. Keys of
// types other than string and zset are returned with only Kind and expiry.
// Keys are read in pipelined batches; the state should not change meanwhile.
func Dump(ctx context.Context, rdb redis.UniversalClient, opts Options) (State, error) {
	keys, err := scanAll(ctx, rdb)
	if err != nil {
		return nil, err
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return strings.HasPrefix(k, opts.KeyPrefix+"px:") })
	out := State{}
	for len(keys) > 0 {
		n := min(len(keys), dumpBatch)
		if err := readKeys(ctx, rdb, keys[:n], out); err != nil {
			return nil, err
		}
		keys = keys[n:]
	}
	return out, nil
}

// dumpBatch is the number of keys read per pipeline.
const dumpBatch = 500

// scanAll returns every key, scanning each master of a cluster.
func scanAll(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return scan(ctx, rdb)
	}
	var (
		mu  sync.Mutex
		all []string
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := scan(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		all = append(all, keys...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("scan cluster masters: %w", err)
	}
	return all, nil
}

// scan returns every key of one server.
func scan(ctx context.Context, c redis.Cmdable) ([]string, error) {
	var (
		keys   []string
		cursor uint64
	)
	for {
		page, next, err := c.Scan(ctx, cursor, "", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		keys = append(keys, page...)
		if next == 0 {
			return keys, nil
		}
		cursor = next
	}
}

// readKeys reads the type, expiry and content of keys into out, in two
// pipelines; keys that vanished meanwhile are left out.
func readKeys(ctx context.Context, rdb redis.UniversalClient, keys []string, out State) error {
	types := make([]*redis.StatusCmd, len(keys))
	exps := make([]*redis.DurationCmd, len(keys))
	pipe := rdb.Pipeline()
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k)
		exps[i] = pipe.PExpireTime(ctx, k)
	}
	_, _ = pipe.Exec(ctx) // errors are checked per command
	strs := make([]*redis.StringCmd, len(keys))
	zsets := make([]*redis.ZSliceCmd, len(keys))
	pipe = rdb.Pipeline()
	for i, k := range keys {
		typ, err := types[i].Result()
		if err != nil {
			return fmt.Errorf("type %q: %w", k, err)
		}
		switch typ {
		case KindString:
			strs[i] = pipe.Get(ctx, k)
		case KindZSet:
			zsets[i] = pipe.ZRangeWithScores(ctx, k, 0, -1)
		}
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx) // errors are checked per command
	}
	for i, k := range keys {
		exp, err := exps[i].Result()
		if err != nil {
			return fmt.Errorf("pexpiretime %q: %w", k, err)
		}
		v := Value{Kind: types[i].Val()}
		switch {
		case v.Kind == "none" || exp == -2:
			continue
		case exp != -1:
			v.ExpireAtMs = exp.Milliseconds()
		}
		switch {
		case strs[i] != nil:
			v.Str, err = strs[i].Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
		case zsets[i] != nil:
			var zs []redis.Z
			zs, err = zsets[i].Result()
			v.ZSet = make(map[string]float64, len(zs))
			for _, z := range zs {
				v.ZSet[z.Member.(string)] = z.Score
			}
			if err == nil && len(zs) == 0 {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("read %s %q: %w", v.Kind, k, err)
		}
		out[k] = v
	}
	return nil
}

// Diff returns one line per difference between want and got, sorted: missing
// and extra keys, wrong types, string values, sorted-set members and scores,
// and expiries that differ by more than tol (or exist on one side only).
// Dead entries of windowed sorted sets (lv, hist, recent, orders index: own
// score + retention <= opts.Now) are ignored on both sides, and such a key
// with no live entry may be missing on either side.
func Diff(want, got State, opts Options, tol time.Duration) []string {
	var out []string
	union := map[string]bool{}
	for k := range want {
		union[k] = true
	}
	for k := range got {
		union[k] = true
	}
	deadAt := opts.nowMs()
	if opts.Settle.After(opts.Now) {
		deadAt = opts.Settle.UnixMilli()
	}
	settling := func(v Value, in bool) bool {
		return in && v.ExpireAtMs != 0 && v.ExpireAtMs <= deadAt
	}
	for _, k := range sortedKeys(union) {
		w, inW := want[k]
		g, inG := got[k]
		if settling(w, inW) || settling(g, inG) {
			continue
		}
		if keep, ok := retentionOf(k, opts); ok {
			w.ZSet = live(w.ZSet, keep, deadAt)
			g.ZSet = live(g.ZSet, keep, deadAt)
			deadOnly := func(in bool, v Value) bool { return !in || (v.Kind == KindZSet && len(v.ZSet) == 0) }
			if deadOnly(inW, w) && deadOnly(inG, g) {
				continue
			}
		}
		switch {
		case !inG:
			out = append(out, fmt.Sprintf("missing key %s (want %s)", k, describe(w)))
		case !inW:
			out = append(out, fmt.Sprintf("extra key %s (got %s)", k, describe(g)))
		case w.Kind != g.Kind:
			out = append(out, fmt.Sprintf("key %s: type %s, want %s", k, g.Kind, w.Kind))
		default:
			out = append(out, diffValue(k, w, g, tol)...)
		}
	}
	return out
}

// diffValue compares two values of the same kind.
func diffValue(k string, w, g Value, tol time.Duration) []string {
	var out []string
	switch w.Kind {
	case KindString:
		if w.Str != g.Str {
			out = append(out, fmt.Sprintf("key %s: value %q, want %q", k, g.Str, w.Str))
		}
	case KindZSet:
		for _, m := range sortedKeys(w.ZSet) {
			gs, ok := g.ZSet[m]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("key %s: missing member %q (want score %.0f)", k, m, w.ZSet[m]))
			case gs != w.ZSet[m]:
				out = append(out, fmt.Sprintf("key %s: member %q score %.0f, want %.0f", k, m, gs, w.ZSet[m]))
			}
		}
		for _, m := range sortedKeys(g.ZSet) {
			if _, ok := w.ZSet[m]; !ok {
				out = append(out, fmt.Sprintf("key %s: extra member %q (score %.0f)", k, m, g.ZSet[m]))
			}
		}
	}
	switch {
	case w.ExpireAtMs == 0 && g.ExpireAtMs != 0:
		out = append(out, fmt.Sprintf("key %s: expires at %s, want no expiry", k, formatExpiry(g.ExpireAtMs)))
	case w.ExpireAtMs != 0 && g.ExpireAtMs == 0:
		out = append(out, fmt.Sprintf("key %s: no expiry, want %s", k, formatExpiry(w.ExpireAtMs)))
	case absMs(w.ExpireAtMs-g.ExpireAtMs) > tol.Milliseconds():
		out = append(out, fmt.Sprintf("key %s: expires at %s, want %s (off by %v)", k,
			formatExpiry(g.ExpireAtMs), formatExpiry(w.ExpireAtMs), time.Duration(g.ExpireAtMs-w.ExpireAtMs)*time.Millisecond))
	}
	return out
}

// describe summarises a value for a missing/extra key line.
func describe(v Value) string {
	switch v.Kind {
	case KindString:
		return fmt.Sprintf("string %q, expiry %s", v.Str, formatExpiry(v.ExpireAtMs))
	case KindZSet:
		ms := rankDesc(v.ZSet)
		if len(ms) > 5 {
			ms = append(ms[:5], "...")
		}
		return fmt.Sprintf("zset of %d members [%s], expiry %s", len(v.ZSet), strings.Join(ms, " "), formatExpiry(v.ExpireAtMs))
	default:
		return fmt.Sprintf("%s, expiry %s", v.Kind, formatExpiry(v.ExpireAtMs))
	}
}

// retentionOf returns the entry retention of a windowed sorted-set key (whose
// entries can be dead) in ms.
func retentionOf(k string, opts Options) (int64, bool) {
	name, ok := strings.CutPrefix(k, opts.KeyPrefix)
	if !ok {
		return 0, false
	}
	p := opts.Projections
	switch {
	case strings.HasPrefix(name, "lv:"):
		return ms(p.LastViewed.TTL), true
	case strings.HasPrefix(name, "hist:"):
		return ms(p.History.Retention), true
	case strings.HasPrefix(name, "recent:"):
		return ms(p.RecentOrders.Keep), true
	case strings.HasPrefix(name, "orders:"):
		return ms(p.Orders.TTL), true
	}
	return 0, false
}

// live returns the members of z that are not dead (score + keep > now).
func live(z map[string]float64, keep, now int64) map[string]float64 {
	if z == nil {
		return nil
	}
	out := make(map[string]float64, len(z))
	for m, s := range z {
		if int64(s)+keep > now {
			out[m] = s
		}
	}
	return out
}

// absMs returns |d|.
func absMs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}
