package dashboard

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/fingerprint"
	"projector/pkg/projections"
)

// seed writes a realistic, deterministic state as of now (UTC, prefix
// "shop:"): 24 hours of counters, rankings, recent orders, user u1's lists
// and two consumers. Known values the test looks for: views today 1,234 +
// the hours, bestseller "sku-001", trending "sku-hot", user u1's "sku-seen-1"
// and order "ord-u1-1"; last_viewed and stats are being rebuilt, 42% done at
// 25,000 ev/s.
func seed(t *testing.T, rdb redis.UniversalClient, now time.Time) {
	t.Helper()
	ctx := context.Background()
	k := projections.Keys{Prefix: "shop:"}
	p := rdb.TxPipeline()
	day := now.Format("2006-01-02")
	ms := func(d time.Duration) float64 { return float64(now.Add(-d).UnixMilli()) }
	today := map[string]int64{}
	for h := range 24 {
		at := now.Add(-time.Duration(h) * time.Hour)
		views := int64(800 + 600*math.Sin(float64(at.Hour())/24*2*math.Pi-1.5))
		counts := map[string]int64{"views": views, "clicks": views / 4, "orders": views / 40, "units": views / 25, "revenue_cents": views * 130}
		for stat, v := range counts {
			p.Set(ctx, k.GlobalStat(stat, at.Format("2006-01-02T15")), v, 0)
			if at.Format("2006-01-02") == day {
				today[stat] += v
			}
		}
	}
	today["views"] += 1234 // so the page must show a number the hours alone do not give
	for stat, v := range today {
		p.Set(ctx, k.GlobalStat(stat, day), v, 0)
	}
	for i := 1; i <= 30; i++ {
		sku := fmt.Sprintf("sku-%03d", i)
		p.ZAdd(ctx, k.Bestsellers(day), redis.Z{Member: sku, Score: float64(100 / i)})
		p.ZAdd(ctx, k.ProductViews(day), redis.Z{Member: sku, Score: float64(3000/i + 7*i)})
		for d := 1; d < 7; d++ {
			if (i+d)%3 != 0 {
				p.ZAdd(ctx, k.Bestsellers(now.AddDate(0, 0, -d).Format("2006-01-02")), redis.Z{Member: sku, Score: float64(60 / i)})
			}
		}
	}
	for m := range 60 {
		key := k.Trending(now.Add(-time.Duration(m) * time.Minute).Format("2006-01-02T15:04"))
		p.ZAdd(ctx, key, redis.Z{Member: fmt.Sprintf("sku-%03d", 1+m%12), Score: 5}, redis.Z{Member: "sku-hot", Score: float64(20 - m/3)})
	}
	for i := range 20 {
		p.ZAdd(ctx, k.RecentOrders(), redis.Z{Member: fmt.Sprintf("ord-%04d", 9000+i), Score: ms(time.Duration(20-i) * 25 * time.Second)})
	}
	for i := 1; i <= 12; i++ {
		p.ZAdd(ctx, k.LastViewed("u1"), redis.Z{Member: fmt.Sprintf("sku-seen-%d", i), Score: ms(time.Duration(i) * 7 * time.Minute)})
		p.ZAdd(ctx, k.History("u1", "", "", false), redis.Z{Member: fmt.Sprintf("sku-seen-%d@%s", i, day), Score: ms(time.Duration(i) * 7 * time.Minute)})
	}
	for i := 1; i <= 3; i++ {
		id, ts := fmt.Sprintf("ord-u1-%d", i), now.Add(-time.Duration(i)*26*time.Hour).UnixMilli()
		p.Set(ctx, k.Order("u1", id), fmt.Sprintf(`{"id":%q,"user_id":"u1","ts":%d,"items":[{"product_id":"sku-00%d","quantity":%d,"price_cents":1999}],"total_cents":%d}`,
			id, ts, i, i, i*1999), 0)
		p.ZAdd(ctx, k.Orders("u1"), redis.Z{Member: id, Score: float64(ts)})
	}
	p.HSet(ctx, k.Meta(), "status", "ready", "rebuild", "last_viewed,stats", "rebuild_done", 420_000, "rebuild_total", 1_000_000,
		"rebuild_rate", 25_000, "rebuild_updated_ms", now.UnixMilli())
	for i := 1; i <= 2; i++ {
		p.HSet(ctx, fingerprint.Key("shop:"), fmt.Sprintf("consumer-host-%d/41%d", i, i), fmt.Sprintf(`{"at_ms":%d}`, now.Add(-time.Second).UnixMilli()))
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("seed: %v", err)
	}
}
