package query

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// pageAll follows cursors from the first page to the end, calling between
// after every page.
func pageAll(t *testing.T, read func(PageRequest) (RankPage, error), size int, between func(page int)) []Ranked {
	t.Helper()
	var all []Ranked
	req := PageRequest{Size: size, Cursor: true}
	for n := 1; ; n++ {
		p, err := read(req)
		if err != nil {
			t.Fatalf("page %d: %v", n, err)
		}
		all = append(all, p.Items...)
		if p.Next == "" {
			return all
		}
		if n > 100 {
			t.Fatal("cursor paging does not end")
		}
		between(n)
		req.Token = p.Next
	}
}

func TestBestsellersTodayRankPagesReadLiveKey(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	live := f.keys.Bestsellers("2026-12-02")
	f.zadd(t, live, "b1", 60, "b2", 50, "b3", 40, "b4", 30, "b5", 20, "b6", 10)
	p1 := must(f.r.BestsellersToday(ctx, PageRequest{Page: 1, Size: 3}))
	f.rdb.ZIncrBy(ctx, live, 50, "b5") // a sale between the two requests
	p2 := must(f.r.BestsellersToday(ctx, PageRequest{Page: 2, Size: 3}))
	// Rank pages of a live key drift (b3 twice, b5 never): that is why
	// cursor pages read a snapshot.
	equal(t, "live rank pages", append(ids(p1.Items), ids(p2.Items)...), []string{"b1", "b2", "b3", "b3", "b4", "b6"})
	if p1.Total != 6 || p2.Items[0].Rank != 4 || p1.Snapshot != "" {
		t.Fatalf("page metadata: %+v %+v", p1, p2)
	}
}

func TestCursorPagesNeverRepeatOrSkipUnderWrites(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	live := f.keys.Bestsellers("2026-12-02")
	// Ties: five products with 7 units, three with 3.
	f.zadd(t, live, "a", 9, "t1", 7, "t2", 7, "t3", 7, "t4", 7, "t5", 7, "m", 5, "s1", 3, "s2", 3, "s3", 3, "z", 1)
	want := []string{"a", "t5", "t4", "t3", "t2", "t1", "m", "s3", "s2", "s1", "z"}
	writes := 0
	got := pageAll(t, func(req PageRequest) (RankPage, error) { return f.r.BestsellersToday(ctx, req) }, 3, func(page int) {
		// Between pages: an unseen product overtakes everything, a seen
		// one climbs, a new product appears, a tie is broken.
		f.rdb.ZIncrBy(ctx, live, 100, "z")
		f.rdb.ZIncrBy(ctx, live, 1, "t2")
		f.rdb.ZIncrBy(ctx, live, 50, fmt.Sprintf("new%d", page))
		f.rdb.ZIncrBy(ctx, live, 1, "s1")
		writes++
	})
	if writes == 0 {
		t.Fatal("no writes landed between pages")
	}
	equal(t, "cursor pages", ids(got), want)
	for i, it := range got {
		if it.Rank != int64(i+1) {
			t.Fatalf("entry %d has rank %d", i, it.Rank)
		}
	}
	// The next first page sees the writes once the snapshot is no longer current.
	f.rdb.Del(ctx, f.r.snapPointer("best1:2026-12-02"))
	p := must(f.r.BestsellersToday(ctx, PageRequest{Size: 2, Cursor: true}))
	equal(t, "fresh snapshot", ids(p.Items), []string{"z", "new3"})
}

func TestMostViewedToday(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	f.zadd(t, f.keys.ProductViews("2026-12-02"), "v1", 10, "v2", 30, "v3", 20)
	f.zadd(t, f.keys.ProductViews("2026-12-01"), "old", 99)
	p := must(f.r.MostViewedToday(ctx, PageRequest{Page: 1, Size: 10}))
	equal(t, "most viewed", ids(p.Items), []string{"v2", "v3", "v1"})
	equal(t, "scores", p.Items[0].Score, 30.0)
}

// seedWeek writes 8 days of bestsellers ending on 2026-12-02.
func seedWeek(t *testing.T, f *fixture) {
	t.Helper()
	day := func(d int) string { return f.keys.Bestsellers(fmt.Sprintf("2026-12-%02d", d)) }
	nov := func(d int) string { return f.keys.Bestsellers(fmt.Sprintf("2026-11-%02d", d)) }
	// "steady" sells 4 units on each of 7 days = 28; "burst" 28 units on one
	// day; "pair" 14+14 on two days: equal units, days break the tie.
	for d := 26; d <= 30; d++ {
		f.zadd(t, nov(d), "steady", 4)
	}
	f.zadd(t, day(1), "steady", 4, "pair", 14, "tiny", 1)
	f.zadd(t, day(2), "steady", 4, "pair", 14, "burst", 28, "even-a", 5, "even-b", 5)
	f.zadd(t, nov(25), "too-old", 1000) // 8 days ago: outside the window
}

func TestBestsellersWeekSnapshot(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	seedWeek(t, f)
	p := must(f.r.BestsellersWeek(ctx, PageRequest{Page: 1, Size: 10}))
	equal(t, "week order", ids(p.Items), []string{"steady", "pair", "burst", "even-b", "even-a", "tiny"})
	equal(t, "steady", p.Items[0], Ranked{Rank: 1, ProductID: "steady", Score: 287, Units: 28, Days: 7})
	equal(t, "pair", p.Items[1], Ranked{Rank: 2, ProductID: "pair", Score: 282, Units: 28, Days: 2})
	equal(t, "burst", p.Items[2], Ranked{Rank: 3, ProductID: "burst", Score: 281, Units: 28, Days: 1})
	if p.Total != 6 || p.Snapshot == "" || p.BuiltAt != testNow.UnixMilli() {
		t.Fatalf("page metadata: %+v", p)
	}
	// Lifetimes, and no temporary key left behind.
	keys := f.allKeys(t, "*snap*")
	ptr := f.r.snapPointer("best7:2026-12-02")
	if len(keys) != 2 || keys[0] != ptr {
		t.Fatalf("snapshot keys: %v", keys)
	}
	if ttl := must(f.rdb.PTTL(ctx, ptr).Result()); ttl <= WeekFresh-time.Minute || ttl > WeekFresh {
		t.Fatalf("pointer TTL %v, want about %v", ttl, WeekFresh)
	}
	if ttl := must(f.rdb.PTTL(ctx, keys[1]).Result()); ttl <= WeekFresh || ttl > WeekFresh+CursorKeep {
		t.Fatalf("snapshot TTL %v, want about %v", ttl, WeekFresh+CursorKeep)
	}
	// Sales after the build do not change the current snapshot.
	f.zadd(t, f.keys.Bestsellers("2026-12-02"), "tiny", 1000)
	again := must(f.r.BestsellersWeek(ctx, PageRequest{Page: 1, Size: 10}))
	equal(t, "same snapshot", again, p)
}

func TestWeekCursorSurvivesRebuild(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	seedWeek(t, f)
	p1 := must(f.r.BestsellersWeek(ctx, PageRequest{Size: 2, Cursor: true}))
	// The snapshot stops being current and a new build (with new sales) takes over.
	f.rdb.Del(ctx, f.r.snapPointer("best7:2026-12-02"))
	f.zadd(t, f.keys.Bestsellers("2026-12-02"), "tiny", 1000)
	fresh := must(f.r.BestsellersWeek(ctx, PageRequest{Page: 1, Size: 1}))
	equal(t, "new build", ids(fresh.Items), []string{"tiny"})
	p2 := must(f.r.BestsellersWeek(ctx, PageRequest{Size: 10, Cursor: true, Token: p1.Next}))
	equal(t, "old cursor continues on its snapshot", append(ids(p1.Items), ids(p2.Items)...),
		[]string{"steady", "pair", "burst", "even-b", "even-a", "tiny"})
	// Once the old snapshot is gone the cursor says so.
	c := must(DecodeCursor(p1.Next))
	f.rdb.Del(ctx, f.r.snapAt(c.Name, c.Version).key)
	if _, err := f.r.BestsellersWeek(ctx, PageRequest{Size: 10, Cursor: true, Token: p1.Next}); !errors.Is(err, ErrCursorExpired) {
		t.Fatalf("cursor of a deleted snapshot: got %v, want ErrCursorExpired", err)
	}
}

func TestCursorValidation(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	seedWeek(t, f)
	p := must(f.r.BestsellersWeek(ctx, PageRequest{Size: 2, Cursor: true}))
	c := must(DecodeCursor(p.Next))
	for name, token := range map[string]string{
		"garbage":       "not-a-cursor",
		"other ranking": p.Next,
		"wrong score":   Cursor{Name: c.Name, Version: c.Version, Score: c.Score + 1, Member: c.Member}.Encode(),
		"wrong member":  Cursor{Name: c.Name, Version: c.Version, Score: c.Score, Member: "nope"}.Encode(),
		"odd version":   Cursor{Name: c.Name, Version: c.Version + ":tmp:out", Score: c.Score, Member: c.Member}.Encode(),
		"odd name":      Cursor{Name: "best7:x", Version: c.Version, Score: c.Score, Member: c.Member}.Encode(),
	} {
		read := f.r.BestsellersWeek
		if name == "other ranking" {
			read = f.r.BestsellersToday
		}
		var ie *InputError
		if _, err := read(ctx, PageRequest{Size: 2, Cursor: true, Token: token}); !errors.As(err, &ie) || ie.Param != "cursor" {
			t.Errorf("%s: got %v, want an InputError about cursor", name, err)
		}
	}
}

func TestConcurrentBuildsDoNotClobber(t *testing.T) {
	f := newFixture(t, time.UTC)
	checkConcurrentBuilds(t, f)
}

// checkConcurrentBuilds runs 8 builds of the weekly snapshot at once and
// checks every one of them holds the full ranking.
func checkConcurrentBuilds(t *testing.T, f *fixture) {
	ctx := context.Background()
	seedWeek(t, f)
	spec := f.r.weekSpec(f.r.lastDays(WeekDays))
	var wg sync.WaitGroup
	snaps := make([]snapshot, 8)
	errs := make([]error, 8)
	for i := range snaps {
		wg.Go(func() { snaps[i], errs[i] = f.r.build(ctx, spec) })
	}
	wg.Wait()
	want := []redis.Z{{Member: "steady", Score: 287}, {Member: "pair", Score: 282}, {Member: "burst", Score: 281},
		{Member: "even-b", Score: 51}, {Member: "even-a", Score: 51}, {Member: "tiny", Score: 11}}
	versions := map[string]bool{}
	for i, s := range snaps {
		if errs[i] != nil {
			t.Fatalf("build %d: %v", i, errs[i])
		}
		versions[s.version] = true
		got := must(f.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: s.key, Start: 0, Stop: -1, Rev: true}).Result())
		equal(t, "build "+s.version, got, want)
	}
	if len(versions) != 8 {
		t.Fatalf("builds share versions: %v", versions)
	}
	cur := must(f.rdb.Get(ctx, f.r.snapPointer(spec.name)).Result())
	if !versions[cur] {
		t.Fatalf("pointer %q names none of the builds", cur)
	}
	if tmp := f.allKeys(t, "*:tmp:*"); len(tmp) != 0 {
		t.Fatalf("temporary keys left: %v", tmp)
	}
}

func TestSnapshotsOnCluster(t *testing.T) {
	cl := newClusterFixture(t)
	checkConcurrentBuilds(t, cl)
	ctx := context.Background()
	got := pageAll(t, func(req PageRequest) (RankPage, error) { return cl.r.BestsellersWeek(ctx, req) }, 4, func(int) {})
	equal(t, "cluster cursor pages", ids(got), []string{"steady", "pair", "burst", "even-b", "even-a", "tiny"})
	cl.zadd(t, cl.keys.Trending("2026-12-02T15:04"), "hot", 3)
	tr := must(cl.r.Trending(ctx, 5))
	equal(t, "cluster trending", ids(tr.Items), []string{"hot"})
	// One MGET over a user's slot, and a user's orders with their documents.
	cl.rdb.Set(ctx, cl.keys.UserStat("u1", "units", "2026-12"), 40, 0)
	cl.rdb.Set(ctx, cl.keys.UserStat("u1", "units", "2026-11-30"), 2, 0)
	res := must(cl.r.Stats(ctx, StatsQuery{Stat: "units", User: "u1", Granularity: "day",
		From: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), To: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}))
	equal(t, "cluster stats total", res.Total, int64(42))
	cl.rdb.Set(ctx, cl.keys.Order("u1", "o1"), `{"id":"o1","user_id":"u1","ts":1,"items":[],"total_cents":0}`, 0)
	cl.zadd(t, cl.keys.Orders("u1"), "o1", ms(time.Hour))
	equal(t, "cluster orders", must(cl.r.CustomerOrders(ctx, "u1", 1, 5)).Orders[0].ID, "o1")
	// Ranks on the same cluster (Redis 7.0: ZREVRANK and ZSCORE), over a
	// generated day.
	if err := cl.rdb.(*redis.ClusterClient).ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.FlushDB(ctx).Err()
	}); err != nil {
		t.Fatalf("FLUSHDB: %v", err)
	}
	seedRankDay(t, cl)
	checkRanksMatchPages(t, cl)
}

func TestTrendingWeighsRecentMinutes(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	minute := func(ago int) string {
		return f.keys.Trending(testNow.Add(-time.Duration(ago) * time.Minute).Format("2006-01-02T15:04"))
	}
	f.zadd(t, minute(0), "now", 10)                   // weight 60/60
	f.zadd(t, minute(30), "half-hour", 15)            // weight 30/60 -> 7.5
	f.zadd(t, minute(59), "old", 100, "now", 3)       // weight 1/60
	f.zadd(t, minute(60), "too-old", 10000)           // outside the window
	f.zadd(t, minute(1), "recent", 5, "half-hour", 1) // weight 59/60
	p := must(f.r.Trending(ctx, 10))
	equal(t, "trending", ids(p.Items), []string{"now", "half-hour", "recent", "old"})
	equal(t, "scores", []float64{p.Items[0].Score, p.Items[1].Score, p.Items[2].Score, p.Items[3].Score},
		[]float64{10.05, 8.48, 4.92, 1.67})
	if _, err := f.r.Trending(ctx, 0); err == nil {
		t.Fatal("n=0 accepted")
	}
}
