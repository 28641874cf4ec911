package query

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"projector/internal/testing/testredis"
)

// seedRankDay writes a generated day (seeded, the same every run): today's
// bestsellers and views of 90 products each, bestsellers on the 6 days
// before, and 45 products viewed over the last hour's minutes. Scores come
// from small ranges, so many products share one.
func seedRankDay(t *testing.T, f *fixture) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	ctx := context.Background()
	days := f.r.lastDays(WeekDays)
	p := f.rdb.Pipeline()
	for i := range 100 {
		id := fmt.Sprintf("p%03d", i)
		if i%10 != 9 { // every tenth product sold nothing today
			p.ZAdd(ctx, f.keys.Bestsellers(days[0]), redis.Z{Member: id, Score: float64(1 + rng.IntN(8))})
		}
		if i%10 != 4 {
			p.ZAdd(ctx, f.keys.ProductViews(days[0]), redis.Z{Member: id, Score: float64(rng.IntN(15))})
		}
		for _, d := range days[1:] {
			if rng.IntN(3) == 0 {
				p.ZAdd(ctx, f.keys.Bestsellers(d), redis.Z{Member: id, Score: float64(1 + rng.IntN(3))})
			}
		}
		if i%2 == 0 && i < 90 {
			// The products of a group of three get the same views in the
			// same minutes: equal weighted scores.
			group := rand.New(rand.NewPCG(uint64(i/6), 3))
			for range 3 {
				ago := time.Duration(group.IntN(TrendingMinutes)) * time.Minute
				p.ZIncrBy(ctx, f.keys.Trending(testNow.Add(-ago).Format("2006-01-02T15:04")), float64(1+group.IntN(3)), id)
			}
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("seed: %v", err)
	}
}

// rankingPages reads every entry of ranking through its page API: cursor
// pages of 7 (trending: its one page of at most 100).
func rankingPages(t *testing.T, f *fixture, ranking Ranking) []Ranked {
	t.Helper()
	ctx := context.Background()
	read := map[Ranking]func(context.Context, PageRequest) (RankPage, error){
		RankingBestsellersToday: f.r.BestsellersToday, RankingBestsellersWeek: f.r.BestsellersWeek,
		RankingMostViewedToday: f.r.MostViewedToday,
	}[ranking]
	if read == nil {
		return must(f.r.Trending(ctx, MaxPageSize)).Items
	}
	return pageAll(t, func(req PageRequest) (RankPage, error) { return read(ctx, req) }, 7, func(int) {})
}

// checkRanksMatchPages checks, for every ranking of the generated day, that
// each product's rank, score and total are its entry on the pages, that
// neighbours at the top, in the middle and at the bottom are the pages'
// entries, and that a product absent from the ranking is ErrNotRanked.
func checkRanksMatchPages(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	for _, rk := range Rankings() {
		pages := rankingPages(t, f, rk)
		n := len(pages)
		if n < 30 {
			t.Fatalf("%s: only %d entries on the pages", rk, n)
		}
		ties := 0
		for i, want := range pages {
			got, err := f.r.Rank(ctx, rk, want.ProductID, 0)
			if err != nil {
				t.Fatalf("%s: Rank(%s): %v", rk, want.ProductID, err)
			}
			if got.Ranked != want || got.Total != int64(n) || got.Around != nil || got.Ranking != rk {
				t.Fatalf("%s: Rank(%s) = %+v, want %+v of %d (entry %d of the pages)", rk, want.ProductID, got, want, n, i)
			}
			if i > 0 && pages[i-1].Score == want.Score {
				ties++
			}
		}
		if ties < 10 {
			t.Fatalf("%s: only %d ties: the test needs products sharing a score", rk, ties)
		}
		for _, c := range []struct {
			at, around, from, to int // the pages' entries [from, to) around entry at
		}{{0, 3, 0, 4}, {1, 3, 0, 5}, {n / 2, MaxAround, n/2 - MaxAround, n/2 + MaxAround + 1}, {n - 2, 3, n - 5, n}, {n - 1, 3, n - 4, n}, {0, MaxAround, 0, MaxAround + 1}} {
			got := must(f.r.Rank(ctx, rk, pages[c.at].ProductID, c.around))
			equal(t, fmt.Sprintf("%s: around %d of rank %d", rk, c.around, c.at+1), got.Around, pages[c.from:c.to])
		}
		if _, err := f.r.Rank(ctx, rk, "absent", 2); !errors.Is(err, ErrNotRanked) || !strings.Contains(err.Error(), "absent") {
			t.Fatalf("%s: a product without an entry: got %v, want ErrNotRanked naming it", rk, err)
		}
	}
	if _, err := f.r.Rank(ctx, RankingBestsellersToday, "p009", 0); !errors.Is(err, ErrNotRanked) {
		t.Fatalf("p009 sold nothing today: got %v, want ErrNotRanked", err)
	}
}

func TestRankMatchesPages(t *testing.T) {
	for _, fl := range testredis.Flavors() {
		t.Run(string(fl), func(t *testing.T) {
			f := fixtureOn(t, testredis.StartStandalone(t, testredis.WithFlavor(fl)).Client(), time.UTC)
			seedRankDay(t, f)
			checkRanksMatchPages(t, f)
			want := map[testredis.Flavor]int32{testredis.Redis: capNo, testredis.Valkey: capYes}[fl]
			if got := f.r.rank.withScore.Load(); got != want {
				t.Fatalf("WITHSCORE support found %d, want %d", got, want)
			}
		})
	}
	// TestSnapshotsOnCluster checks Redis 7.0 Cluster (ZREVRANK and ZSCORE).
	t.Run("valkey cluster", func(t *testing.T) {
		f := fixtureOn(t, testredis.StartCluster(t, 3, testredis.WithValkey()).Client(), time.UTC)
		seedRankDay(t, f)
		checkRanksMatchPages(t, f)
		if got := f.r.rank.withScore.Load(); got != capYes {
			t.Fatalf("WITHSCORE support found %d, want %d", got, capYes)
		}
	})
}

func TestRankOnMiniredis(t *testing.T) {
	for name, withScore := range map[string]int32{"WITHSCORE": capYes, "ZREVRANK and ZSCORE": capNo} {
		t.Run(name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			f := fixtureOn(t, rdb, time.UTC)
			f.r.rank.withScore.Store(withScore)
			seedRankDay(t, f)
			checkRanksMatchPages(t, f)
		})
	}
}

// tripLog counts round trips (one per command sent alone, one per
// pipeline or MULTI) and records the commands of each; a new connection's
// handshake (HELLO, CLIENT SETINFO) is left out.
type tripLog struct {
	mu    sync.Mutex
	trips [][]string
}

func (l *tripLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *tripLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.add(cmd)
		return next(ctx, cmd)
	}
}
func (l *tripLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		l.add(cmds...)
		return next(ctx, cmds)
	}
}
func (l *tripLog) add(cmds ...redis.Cmder) {
	var names []string
	for _, c := range cmds {
		names = append(names, c.Name())
	}
	if names[0] == "hello" || names[0] == "client" {
		return
	}
	l.mu.Lock()
	l.trips = append(l.trips, names)
	l.mu.Unlock()
}
func (l *tripLog) reset() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.trips
	l.trips = nil
	return out
}

func TestRankRoundTrips(t *testing.T) {
	rank := map[testredis.Flavor][]string{
		testredis.Redis:  {"multi", "get", "zrevrank", "zscore", "zcard", "exec"},
		testredis.Valkey: {"multi", "get", "zrevrank", "zcard", "exec"},
	}
	for _, fl := range testredis.Flavors() {
		t.Run(string(fl), func(t *testing.T) {
			srv := testredis.StartStandalone(t, testredis.WithFlavor(fl))
			f := fixtureOn(t, srv.Client(), time.UTC)
			ctx := context.Background()
			f.zadd(t, f.keys.Bestsellers("2026-12-02"), "a", 5, "b", 4, "c", 4, "d", 1)
			log := &tripLog{}
			f.rdb.AddHook(log)
			first := must(f.r.Rank(ctx, RankingBestsellersToday, "b", 0))
			// The probe, the pointer (none yet), the build, the read.
			if trips := log.reset(); len(trips) != 4 || trips[0][0] != "zrevrank" {
				t.Fatalf("first call: %v", trips)
			}
			if first.Rank != 3 || first.Score != 4 || first.Total != 4 {
				t.Fatalf("first call: %+v", first)
			}
			for range 2 {
				must(f.r.Rank(ctx, RankingBestsellersToday, "c", 0))
				equal(t, "warm call", log.reset(), [][]string{rank[fl]})
			}
			got := must(f.r.Rank(ctx, RankingBestsellersToday, "c", 1))
			equal(t, "warm call with neighbours", log.reset(), [][]string{rank[fl], {"zrevrange"}})
			equal(t, "neighbours", ids(got.Around), []string{"a", "c", "b"})
			// Sales after the build do not move the rank: the snapshot is
			// still current, as for cursor pages.
			f.zadd(t, f.keys.Bestsellers("2026-12-02"), "d", 9)
			equal(t, "rank of d on the snapshot", must(f.r.Rank(ctx, RankingBestsellersToday, "d", 0)).Rank, int64(4))
			// Once the snapshot is no longer current, the next call builds
			// one with the sales: the read that found the pointer gone, the
			// pointer again, the build, the read.
			f.rdb.Del(ctx, f.r.snapPointer("best1:2026-12-02"))
			log.reset()
			equal(t, "rank of d on a new snapshot", must(f.r.Rank(ctx, RankingBestsellersToday, "d", 0)).Rank, int64(1))
			if trips := log.reset(); len(trips) != 4 {
				t.Fatalf("after the pointer expired: %v", trips)
			}
			// A snapshot that another reader built becomes current: two
			// round trips, the second reading the new version.
			other := fixtureOn(t, srv.Client(), time.UTC)
			f.rdb.Del(ctx, f.r.snapPointer("best1:2026-12-02"))
			f.zadd(t, f.keys.Bestsellers("2026-12-02"), "e", 20)
			must(other.r.BestsellersToday(ctx, PageRequest{Size: 1, Cursor: true}))
			log.reset()
			equal(t, "rank of e", must(f.r.Rank(ctx, RankingBestsellersToday, "e", 0)).Rank, int64(1))
			equal(t, "after another build", log.reset(), [][]string{rank[fl], rank[fl]})
		})
	}
}

func TestRankValidation(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	f := fixtureOn(t, rdb, time.UTC)
	ctx := context.Background()
	for _, c := range []struct {
		ranking Ranking
		product string
		around  int
		param   string
	}{
		{"", "p1", 0, "ranking"}, {"bestsellers", "p1", 0, "ranking"}, {"Trending", "p1", 0, "ranking"},
		{RankingTrending, "", 0, "product"}, {RankingTrending, "a b", 0, "product"}, {RankingTrending, "a{b}", 0, "product"},
		{RankingTrending, strings.Repeat("x", 65), 0, "product"},
		{RankingTrending, "p1", -1, "around"}, {RankingTrending, "p1", MaxAround + 1, "around"},
	} {
		var ie *InputError
		if _, err := f.r.Rank(ctx, c.ranking, c.product, c.around); !errors.As(err, &ie) || ie.Param != c.param {
			t.Errorf("Rank(%q, %q, %d): got %v, want an InputError about %s", c.ranking, c.product, c.around, err, c.param)
		}
	}
	f.r.cfg.ProductViews.Enabled = false
	if _, err := f.r.Rank(ctx, RankingMostViewedToday, "p1", 0); !errors.Is(err, ErrDisabled) {
		t.Fatalf("product views switched off: got %v, want ErrDisabled", err)
	}
	if _, err := f.r.Rank(ctx, RankingTrending, "p1", 0); !errors.Is(err, ErrNotRanked) {
		t.Fatalf("empty trending: got %v, want ErrNotRanked", err)
	}
}
