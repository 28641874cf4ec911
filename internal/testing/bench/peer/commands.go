package peer

import (
	"strconv"
	"time"

	"projector/pkg/projections"
)

// Cmd is one Redis command's arguments, name first.
type Cmd []any

// Commands appends the plain commands that carry out w to out: what an
// at-least-once sink sends for a write, without reading anything first and
// without guards. Where the plain command differs from the apply script's
// effect (internal/apply):
//   - every expiry is PEXPIREAT ExpireAt, set by the last write rather than
//     moved only later;
//   - ZAddMax is ZADD GT plus the trims: ZREMRANGEBYRANK for Keep and
//     ZREMRANGEBYSCORE below this event's score minus RetentionMs (the
//     script's floor is the set's highest score); its Guard is ignored;
//   - SetMax is SET (no max);
//   - ZRemUpTo and ZRemPrefixUpTo touch Key only, never the keys listed in
//     Registry (scoped history); ZRemPrefixUpTo removes the entry of the
//     day of its own ts (a pipeline cannot list the others), ZRemMemberUpTo
//     is ZREM without the score check.
//
// loc is the time zone of the day buckets (time_zone).
func Commands(w *projections.Write, loc *time.Location, out []Cmd) []Cmd {
	switch w.Kind {
	case projections.IncrBy:
		out = append(out, Cmd{"INCRBY", w.Key, w.Delta})
	case projections.ZIncrBy:
		out = append(out, Cmd{"ZINCRBY", w.Key, w.Delta, w.Member})
	case projections.ZAddMax:
		out = append(out, Cmd{"ZADD", w.Key, "GT", w.Score, w.Member})
		if w.Trim.Keep > 0 {
			out = append(out, Cmd{"ZREMRANGEBYRANK", w.Key, 0, -(w.Trim.Keep + 1)})
		}
		if w.Trim.RetentionMs > 0 {
			out = append(out, Cmd{"ZREMRANGEBYSCORE", w.Key, "-inf", "(" + strconv.FormatInt(w.Score-w.Trim.RetentionMs, 10)})
		}
	case projections.SetValue:
		return append(out, set(w.Key, w.Value, w.ExpireAt))
	case projections.SetMax:
		return append(out, set(w.Key, w.Score, w.ExpireAt))
	case projections.ZRemUpTo:
		return append(out, Cmd{"ZREMRANGEBYSCORE", w.Key, "-inf", w.Score})
	case projections.ZRemMemberUpTo:
		return append(out, Cmd{"ZREM", w.Key, w.Member})
	case projections.ZRemPrefixUpTo:
		return append(out, Cmd{"ZREM", w.Key, w.Member + projections.BucketsOf(w.Score, loc).Day})
	case projections.SAdd:
		out = append(out, Cmd{"SADD", w.Key, w.Member})
	default:
		return out
	}
	if w.ExpireAt > 0 {
		out = append(out, Cmd{"PEXPIREAT", w.Key, w.ExpireAt})
	}
	return out
}

// set is SET key value, with PXAT when at > 0.
func set(key string, value any, at int64) Cmd {
	if at > 0 {
		return Cmd{"SET", key, value, "PXAT", at}
	}
	return Cmd{"SET", key, value}
}
