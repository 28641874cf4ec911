package query

import (
	"context"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// Snapshot lifetimes.
const (
	// WeekFresh is how long a 7-day bestseller snapshot stays current.
	WeekFresh = 10 * time.Minute
	// DayFresh is how long a snapshot of today's ranking (for cursor
	// paging) stays current.
	DayFresh = time.Minute
	// CursorKeep is how long a snapshot stays readable for cursors after it
	// stopped being current.
	CursorKeep = 10 * time.Minute
)

// buildTTL bounds the life of a build's temporary keys (should the builder
// die halfway).
const buildTTL = time.Minute

// WeekDays is the number of days of the weekly bestsellers, today included.
const WeekDays = 7

// presenceScript adds the members of the ZSET KEYS[1] to the set KEYS[2]
// (expiring after ARGV[1] ms). ZUNIONSTORE counts a set member as score 1,
// which gives the "days with sales" part of the weekly score without
// ZUNIONSTORE ... AGGREGATE COUNT (Redis 8.8+).
const presenceScript = `
local n = redis.call('ZCARD', KEYS[1])
for i = 0, n - 1, 500 do
  redis.call('SADD', KEYS[2], unpack(redis.call('ZRANGE', KEYS[1], i, i + 499)))
end
if n > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
return n`

// BestsellersToday pages today's bestsellers (score = units). Rank pages
// read the live key (a page can drift when sales land between two
// requests); cursor pages read a snapshot of today's key at most DayFresh
// old and never repeat or skip an entry.
func (r *Reader) BestsellersToday(ctx context.Context, req PageRequest) (RankPage, error) {
	if !r.cfg.Bestsellers.Enabled {
		return RankPage{}, disabled("bestsellers")
	}
	day := r.today()
	return r.page(ctx, r.keys.Bestsellers(day), copySpec("best1:"+day, r.keys.Bestsellers(day)), false, req)
}

// MostViewedToday pages today's most viewed products (score = views), like
// BestsellersToday.
func (r *Reader) MostViewedToday(ctx context.Context, req PageRequest) (RankPage, error) {
	if !r.cfg.ProductViews.Enabled {
		return RankPage{}, disabled("product_views")
	}
	day := r.today()
	return r.page(ctx, r.keys.ProductViews(day), copySpec("pv1:"+day, r.keys.ProductViews(day)), false, req)
}

// copySpec snapshots one live ZSET.
func copySpec(name, src string) snapSpec {
	return snapSpec{name: name, fresh: DayFresh, keep: DayFresh + CursorKeep,
		build: func(ctx context.Context, p redis.Pipeliner, dst string, _ func(int) string) {
			p.ZUnionStore(ctx, dst, &redis.ZStore{Keys: []string{src}})
		}}
}

// BestsellersWeek pages the bestsellers of the last WeekDays days (today
// and the 6 days before, in time_zone) from a snapshot rebuilt every
// WeekFresh: score = units*10 + days with sales, so of two products with
// equal units the one that sold on more days ranks first. Rank and cursor
// pages both read the snapshot.
func (r *Reader) BestsellersWeek(ctx context.Context, req PageRequest) (RankPage, error) {
	if !r.cfg.Bestsellers.Enabled {
		return RankPage{}, disabled("bestsellers")
	}
	days := r.lastDays(WeekDays)
	p, err := r.page(ctx, "", r.weekSpec(days), true, req)
	for i := range p.Items {
		weekFields(&p.Items[i])
	}
	return p, err
}

// weekFields sets the units and days with sales of a 7-day bestseller from
// its snapshot score (units*10 + days).
func weekFields(it *Ranked) {
	it.Units, it.Days = int64(it.Score)/10, int64(it.Score)%10
}

// weekSpec builds the weekly snapshot: a copy of each day key (so units and
// days with sales come from the same state even while sales land), a
// presence set per copy, then ZUNIONSTORE over the 7 copies (weight 10) and
// the 7 presence sets (weight 1).
func (r *Reader) weekSpec(days []string) snapSpec {
	return snapSpec{name: "best7:" + days[0], fresh: WeekFresh, keep: WeekFresh + CursorKeep,
		build: func(ctx context.Context, p redis.Pipeliner, dst string, tmp func(int) string) {
			z := &redis.ZStore{}
			var present []string
			for i, d := range days {
				cp, pres := tmp(2*i), tmp(2*i+1)
				p.ZUnionStore(ctx, cp, &redis.ZStore{Keys: []string{r.keys.Bestsellers(d)}})
				p.PExpire(ctx, cp, buildTTL)
				p.Eval(ctx, presenceScript, []string{cp, pres}, buildTTL.Milliseconds())
				z.Keys, z.Weights = append(z.Keys, cp), append(z.Weights, 10) // units
				present = append(present, pres)
			}
			for _, k := range present {
				z.Keys, z.Weights = append(z.Keys, k), append(z.Weights, 1) // a day with sales
			}
			p.ZUnionStore(ctx, dst, z)
		}}
}

// lastDays returns the labels of today and the n-1 days before, newest first.
func (r *Reader) lastDays(n int) []string {
	t := r.now().In(r.loc)
	y, m, d := t.Date()
	out := make([]string, n)
	for i := range out {
		noon := time.Date(y, m, d-i, 12, 0, 0, 0, r.loc)
		out[i] = projections.BucketsOf(noon.UnixMilli(), r.loc).Day
	}
	return out
}

// TrendingMinutes is the number of minute buckets of the trending union.
const TrendingMinutes = 60

// TrendingFresh is how long a trending snapshot stays current.
const TrendingFresh = 15 * time.Second

// Trending returns the top n (1..100) trending products: a snapshot (at most
// TrendingFresh old) of the union of the last 60 minute buckets weighted
// (60-i)/60 for the bucket i minutes ago, so recent minutes weigh more.
// Score is the weighted view count, rounded to 2 decimals.
func (r *Reader) Trending(ctx context.Context, n int) (RankPage, error) {
	if !r.cfg.Trending.Enabled {
		return RankPage{}, disabled("trending")
	}
	if n < 1 || n > MaxPageSize {
		return RankPage{}, badInput("n", "must be in 1..%d (got %d)", MaxPageSize, n)
	}
	p, err := r.page(ctx, "", r.trendingSpec(), true, PageRequest{Page: 1, Size: n})
	for i := range p.Items {
		roundScore(&p.Items[i])
	}
	return p, err
}

// roundScore rounds a trending score to 2 decimals.
func roundScore(it *Ranked) { it.Score = math.Round(it.Score*100) / 100 }

// trendingSpec builds the trending snapshot of the current minute: the union
// of the last TrendingMinutes minute buckets, weighted (60-i)/60 for the
// bucket i minutes ago.
func (r *Reader) trendingSpec() snapSpec {
	now := r.nowMs()
	minute := projections.BucketsOf(now, r.loc).Minute
	z := &redis.ZStore{}
	seen := map[string]bool{}
	for i := range TrendingMinutes {
		label := projections.BucketsOf(now-int64(i)*time.Minute.Milliseconds(), r.loc).Minute
		if seen[label] { // a minute repeated when daylight saving time ends
			continue
		}
		seen[label] = true
		z.Keys = append(z.Keys, r.keys.Trending(label))
		z.Weights = append(z.Weights, float64(TrendingMinutes-i)/TrendingMinutes)
	}
	return snapSpec{name: "trend:" + minute, fresh: TrendingFresh, keep: 2 * TrendingFresh,
		build: func(ctx context.Context, p redis.Pipeliner, dst string, _ func(int) string) {
			p.ZUnionStore(ctx, dst, z)
		}}
}
