package replay

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// patterns returns the key patterns of the named projections (their Specs'
// Patterns, docs/contract.md section 4).
func patterns(prefix string, names []string) []string {
	var out []string
	for _, n := range names {
		if s, ok := projections.Lookup(n); ok {
			out = append(out, s.KeyPatterns(prefix)...)
		}
	}
	return out
}

// bookkeeping are the px: keys that exactly-once relies on (not the lease or meta).
func bookkeeping(prefix string) []string {
	return []string{prefix + "px:seen:*", prefix + "px:wm:*", prefix + "px:nwm:*", prefix + "px:dlq:*"}
}

// wipe deletes every key matching the patterns, on every master (SCAN + UNLINK).
func wipe(ctx context.Context, rdb redis.UniversalClient, pats []string) (int64, error) {
	var total int64
	one := func(ctx context.Context, c redis.Cmdable) error {
		for _, pat := range pats {
			var cursor uint64
			for {
				keys, next, err := c.Scan(ctx, cursor, pat, 1000).Result()
				if err != nil {
					return fmt.Errorf("scan %s: %w", pat, err)
				}
				if len(keys) > 0 { // one UNLINK per key: a page's keys may lie in different slots
					pipe := c.Pipeline()
					for _, k := range keys {
						pipe.Unlink(ctx, k)
					}
					cmds, err := pipe.Exec(ctx)
					if err != nil {
						return fmt.Errorf("unlink %s keys: %w", pat, err)
					}
					for _, cmd := range cmds {
						total += cmd.(*redis.IntCmd).Val()
					}
				}
				if next == 0 {
					break
				}
				cursor = next
			}
		}
		return nil
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu = make(chan struct{}, 1)
		mu <- struct{}{}
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			<-mu
			defer func() { mu <- struct{}{} }()
			return one(ctx, c)
		})
		return total, err
	}
	return total, one(ctx, rdb)
}
