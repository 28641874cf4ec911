package query

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stats names the counters of docs/contract.md section 4.
var Stats = []string{"views", "clicks", "orders", "units", "revenue_cents"}

// StatsQuery selects one counter over [From, To).
type StatsQuery struct {
	// Stat is one of Stats.
	Stat string
	// User selects the user's counters; empty means the global ones.
	User string
	// From and To bound the range; both must start a bucket of Granularity.
	From, To time.Time
	// Granularity of the series: year, month, day or hour (an enabled one).
	Granularity string
}

// StatsPoint is one bucket of a series.
type StatsPoint struct {
	Bucket string `json:"bucket"`
	// Start is the bucket's first instant, Unix ms.
	Start int64 `json:"start"`
	Value int64 `json:"value"`
	// Expired is true when the bucket's key has expired (day and hour keys
	// live projections.stats.day_ttl / hour_ttl after the bucket): Value is
	// then 0 whatever happened.
	Expired bool `json:"expired,omitempty"`
}

// StatsResult is a series and the total over the range.
type StatsResult struct {
	Stat        string       `json:"stat"`
	User        string       `json:"user,omitempty"`
	Granularity string       `json:"granularity"`
	From        int64        `json:"from"`
	To          int64        `json:"to"`
	Series      []StatsPoint `json:"series"`
	// Total is the sum over [From, To), read from the coarsest buckets that
	// cover the range (listed in TotalBuckets), so it survives the expiry of
	// day and hour keys where months and years cover the range.
	Total        int64    `json:"total"`
	TotalBuckets []string `json:"total_buckets"`
	// TotalIncomplete is true when an expired key was needed for Total.
	TotalIncomplete bool `json:"total_incomplete,omitempty"`
}

// Stats reads a series and its total with one MGET (all keys of one query
// share the {g} or {u:<user>} slot).
func (r *Reader) Stats(ctx context.Context, q StatsQuery) (StatsResult, error) {
	c := r.cfg.Stats
	if !c.Enabled {
		return StatsResult{}, disabled("stats")
	}
	if !slices.Contains(Stats, q.Stat) {
		return StatsResult{}, badInput("stat", "must be one of %v (got %q)", Stats, q.Stat)
	}
	g := q.Granularity
	if !slices.Contains(c.Granularities, g) {
		return StatsResult{}, badInput("granularity", "must be one of the enabled granularities %v (got %q)", c.Granularities, g)
	}
	from, to := q.From.UnixMilli(), q.To.UnixMilli()
	if !aligned(g, from, r.loc) {
		return StatsResult{}, badInput("from", "must start a %s in %s (got %s)", g, r.loc, q.From.In(r.loc).Format(time.RFC3339))
	}
	if !aligned(g, to, r.loc) {
		return StatsResult{}, badInput("to", "must start a %s in %s (got %s)", g, r.loc, q.To.In(r.loc).Format(time.RFC3339))
	}
	if to <= from {
		return StatsResult{}, badInput("to", "must be after from")
	}
	if n := (to - from) / minLength[g].Milliseconds(); n > int64(maxPoints[g])+1 {
		return StatsResult{}, badInput("to", "the range holds about %d %ss; at most %d per read", n, g, maxPoints[g])
	}
	series := walk(g, from, to, r.loc)
	if len(series) > maxPoints[g] {
		return StatsResult{}, badInput("to", "the range holds %d %ss; at most %d per read", len(series), g, maxPoints[g])
	}
	parts := cover(c.Granularities, from, to, r.loc)
	values, err := r.mget(ctx, q, g, series, parts)
	if err != nil {
		return StatsResult{}, err
	}
	res := StatsResult{Stat: q.Stat, User: q.User, Granularity: g, From: from, To: to,
		Series: make([]StatsPoint, 0, len(series)), TotalBuckets: make([]string, 0, len(parts))}
	now := r.nowMs()
	for _, b := range series {
		res.Series = append(res.Series, StatsPoint{Bucket: b.label, Start: b.start, Value: values[r.statKey(q, b.label)],
			Expired: r.expired(g, b, now)})
	}
	for _, p := range parts {
		res.Total += values[r.statKey(q, p.b.label)]
		res.TotalBuckets = append(res.TotalBuckets, p.b.label)
		res.TotalIncomplete = res.TotalIncomplete || r.expired(p.g, p.b, now)
	}
	return res, nil
}

// mget reads every key of the series and the cover in one MGET.
func (r *Reader) mget(ctx context.Context, q StatsQuery, g string, series []bucket, parts []coverPart) (map[string]int64, error) {
	keys := make([]string, 0, len(series)+len(parts))
	seen := map[string]bool{}
	add := func(label string) {
		k := r.statKey(q, label)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, b := range series {
		add(b.label)
	}
	for _, p := range parts {
		add(p.b.label)
	}
	var vals []any
	err := r.read(ctx, keys[0], func(c redis.Cmdable, _ bool) error {
		var err error
		vals, err = c.MGet(ctx, keys...).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %d stats keys of %s: %w", len(keys), q.Stat, err)
	}
	out := make(map[string]int64, len(keys))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read %s: not an integer: %q", keys[i], s)
		}
		out[keys[i]] = n
	}
	return out, nil
}

// statKey names the counter of q's stat and user for a bucket label.
func (r *Reader) statKey(q StatsQuery, label string) string {
	if q.User != "" {
		return r.keys.UserStat(q.User, q.Stat, label)
	}
	return r.keys.GlobalStat(q.Stat, label)
}

// expired reports whether the key of bucket b of granularity g has expired.
func (r *Reader) expired(g string, b bucket, now int64) bool {
	var ttl time.Duration
	switch g {
	case "day":
		ttl = r.cfg.Stats.DayTTL
	case "hour":
		ttl = r.cfg.Stats.HourTTL
	default:
		return false
	}
	return b.end+ttl.Milliseconds() <= now
}
