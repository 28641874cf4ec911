package query

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The consumer's embedded demo serves the dashboard over miniredis: every
// read pattern must work there too.
func TestReadPatternsOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	f := fixtureOn(t, rdb, time.UTC)
	ctx := context.Background()
	seedWeek(t, f)
	got := pageAll(t, func(req PageRequest) (RankPage, error) { return f.r.BestsellersWeek(ctx, req) }, 4, func(int) {})
	equal(t, "week on miniredis", ids(got), []string{"steady", "pair", "burst", "even-b", "even-a", "tiny"})
	equal(t, "units and days", []int64{got[0].Units, got[0].Days}, []int64{28, 7})
	f.zadd(t, f.keys.LastViewed("u1"), "p1", ms(time.Minute))
	equal(t, "last viewed", must(f.r.LastViewed(ctx, "u1")), []Viewed{{"p1", ms(time.Minute)}})
	f.zadd(t, f.keys.Trending("2026-12-02T15:04"), "hot", 3)
	equal(t, "trending", ids(must(f.r.Trending(ctx, 3)).Items), []string{"hot"})
	today := pageAll(t, func(req PageRequest) (RankPage, error) { return f.r.BestsellersToday(ctx, req) }, 2, func(int) {})
	equal(t, "today", ids(today), []string{"burst", "pair", "even-b", "even-a", "steady"})
	f.rdb.Set(ctx, f.keys.GlobalStat("views", "2026-12-02"), 5, 0)
	res := must(f.r.Stats(ctx, StatsQuery{Stat: "views", From: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		To: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC), Granularity: "hour"}))
	equal(t, "stats total", res.Total, int64(5))
}
