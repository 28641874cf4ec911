package naive

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// do sends one command and waits for its reply: one round trip.
func (a *Applier) do(ctx context.Context, args ...any) *redis.Cmd {
	a.Commands++
	return a.rdb.Do(ctx, args...)
}

// write carries out one planned write, command by command, with the same
// effect as the apply script (internal/apply/apply.lua) has on it.
func (a *Applier) write(ctx context.Context, w *projections.Write) error {
	switch w.Kind {
	case projections.IncrBy:
		if err := a.do(ctx, "INCRBY", w.Key, w.Delta).Err(); err != nil {
			return err
		}
		return a.expire(ctx, w.Key, w.ExpireAt)
	case projections.ZIncrBy:
		if err := a.do(ctx, "ZINCRBY", w.Key, w.Delta, w.Member).Err(); err != nil {
			return err
		}
		return a.expire(ctx, w.Key, w.ExpireAt)
	case projections.ZAddMax:
		return a.zaddMax(ctx, w)
	case projections.SetValue:
		if err := a.do(ctx, "SET", w.Key, w.Value).Err(); err != nil {
			return err
		}
		return a.expire(ctx, w.Key, w.ExpireAt)
	case projections.SetMax:
		cur, err := a.intValue(ctx, w.Key)
		if err != nil {
			return err
		}
		if cur < w.Score {
			if err := a.do(ctx, "SET", w.Key, w.Score).Err(); err != nil {
				return err
			}
		}
		return a.expire(ctx, w.Key, w.ExpireAt)
	case projections.ZRemUpTo:
		return a.eachTarget(ctx, w, func(k string) error {
			return a.do(ctx, "ZREMRANGEBYSCORE", k, "-inf", w.Score).Err()
		})
	case projections.ZRemMemberUpTo:
		a.Commands++
		s, err := a.rdb.ZScore(ctx, w.Key, w.Member).Result()
		if err == redis.Nil {
			return nil
		}
		if err != nil || s > float64(w.Score) {
			return err
		}
		return a.do(ctx, "ZREM", w.Key, w.Member).Err()
	case projections.ZRemPrefixUpTo:
		return a.eachTarget(ctx, w, func(k string) error { return a.remPrefix(ctx, k, w) })
	case projections.SAdd:
		if err := a.do(ctx, "SADD", w.Key, w.Member).Err(); err != nil {
			return err
		}
		return a.expire(ctx, w.Key, w.ExpireAt)
	}
	return fmt.Errorf("unknown write kind %d", w.Kind)
}

// zaddMax adds a member with ZADD GT unless the guard key holds a later ts,
// trims the set and moves its expiry.
func (a *Applier) zaddMax(ctx context.Context, w *projections.Write) error {
	if w.Guard != "" {
		g, err := a.intValue(ctx, w.Guard)
		if err != nil {
			return err
		}
		if w.Score <= g {
			return nil
		}
	}
	if err := a.do(ctx, "ZADD", w.Key, "GT", w.Score, w.Member).Err(); err != nil {
		return err
	}
	if w.Trim.Keep > 0 {
		if err := a.do(ctx, "ZREMRANGEBYRANK", w.Key, 0, -(w.Trim.Keep + 1)).Err(); err != nil {
			return err
		}
	}
	if w.Trim.RetentionMs > 0 {
		a.Commands++
		top, err := a.rdb.ZRangeWithScores(ctx, w.Key, -1, -1).Result()
		if err != nil {
			return err
		}
		if len(top) == 1 {
			floor := int64(top[0].Score) - w.Trim.RetentionMs
			if err := a.do(ctx, "ZREMRANGEBYSCORE", w.Key, "-inf", "("+strconv.FormatInt(floor, 10)).Err(); err != nil {
				return err
			}
		}
	}
	return a.expire(ctx, w.Key, w.ExpireAt)
}

// remPrefix removes the `<product>@<day>` entries of w.Member scored <= w.Score.
func (a *Applier) remPrefix(ctx context.Context, key string, w *projections.Write) error {
	a.Commands++
	all, err := a.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
	if err != nil {
		return err
	}
	for _, z := range all {
		m, _ := z.Member.(string)
		if len(m) != len(w.Member)+10 || m[:len(w.Member)] != w.Member || int64(z.Score) > w.Score {
			continue
		}
		if err := a.do(ctx, "ZREM", key, m).Err(); err != nil {
			return err
		}
	}
	return nil
}

// eachTarget runs f on w.Key, or on every key listed in the set w.Registry.
func (a *Applier) eachTarget(ctx context.Context, w *projections.Write, f func(string) error) error {
	targets := []string{w.Key}
	if w.Registry != "" {
		var err error
		if targets, err = a.do(ctx, "SMEMBERS", w.Registry).StringSlice(); err != nil {
			return err
		}
	}
	for _, k := range targets {
		if err := f(k); err != nil {
			return err
		}
	}
	return nil
}

// intValue reads an integer string key (-1 when missing).
func (a *Applier) intValue(ctx context.Context, key string) (int64, error) {
	v, err := a.do(ctx, "GET", key).Int64()
	if err == redis.Nil {
		return -1, nil
	}
	return v, err
}

// expire moves the key's expiry to at (Unix ms) unless it already expires
// later: PEXPIREAT NX, then PEXPIREAT GT when the key had an expiry.
func (a *Applier) expire(ctx context.Context, key string, at int64) error {
	if at <= 0 {
		return nil
	}
	set, err := a.do(ctx, "PEXPIREAT", key, at, "NX").Int64()
	if err != nil || set == 1 {
		return err
	}
	return a.do(ctx, "PEXPIREAT", key, at, "GT").Err()
}
