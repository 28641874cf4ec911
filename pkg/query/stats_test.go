package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// cmdLog records the commands sent through a client.
type cmdLog struct {
	mu   sync.Mutex
	cmds []string
}

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.add(cmd.Name())
		return next(ctx, cmd)
	}
}
func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			l.add(c.Name())
		}
		return next(ctx, cmds)
	}
}
func (l *cmdLog) add(name string) { l.mu.Lock(); l.cmds = append(l.cmds, name); l.mu.Unlock() }
func (l *cmdLog) reset() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.cmds
	l.cmds = nil
	return out
}

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestStatsTotalFromCoarsestBucketsInOneMGET(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	f := newFixture(t, ny)
	ctx := context.Background()
	log := &cmdLog{}
	f.rdb.AddHook(log)
	set := func(key string, v int) {
		if err := f.rdb.Set(ctx, key, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	day := time.Date(2026, 10, 30, 0, 0, 0, 0, ny)
	for d := day; d.Before(time.Date(2026, 12, 3, 0, 0, 0, 0, ny)); d = d.AddDate(0, 0, 1) {
		set(f.keys.GlobalStat("views", d.Format("2006-01-02")), d.Day())
	}
	set(f.keys.GlobalStat("views", "2026-11"), 999) // deliberately not the sum of its days
	log.reset()
	res, err := f.r.Stats(ctx, StatsQuery{Stat: "views", From: day, To: time.Date(2026, 12, 3, 0, 0, 0, 0, ny), Granularity: "day"})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "commands", log.reset(), []string{"mget"})
	if len(res.Series) != 34 || res.Series[0].Bucket != "2026-10-30" || res.Series[0].Value != 30 ||
		res.Series[33].Bucket != "2026-12-02" || res.Series[33].Value != 2 || res.Series[33].Start != time.Date(2026, 12, 2, 0, 0, 0, 0, ny).UnixMilli() {
		t.Fatalf("series: %d points, first %+v, last %+v", len(res.Series), res.Series[0], res.Series[len(res.Series)-1])
	}
	equal(t, "total buckets", res.TotalBuckets, []string{"2026-10-30", "2026-10-31", "2026-11", "2026-12-01", "2026-12-02"})
	equal(t, "total", res.Total, int64(30+31+999+1+2))
}

func TestStatsHourSeriesAcrossDaylightSavingEnd(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	f := newFixture(t, ny)
	ctx := context.Background()
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, ny), time.Date(2026, 11, 2, 0, 0, 0, 0, ny)
	if h := to.Sub(from).Hours(); h != 25 {
		t.Fatalf("the test needs a 25-hour day, got %v", h)
	}
	for h := range 24 {
		f.rdb.Set(ctx, f.keys.UserStat("u1", "orders", fmt.Sprintf("2026-11-01T%02d", h)), h+1, 0)
	}
	f.rdb.Set(ctx, f.keys.UserStat("u1", "orders", "2026-11-01"), 7777, 0)
	res := must(f.r.Stats(ctx, StatsQuery{Stat: "orders", User: "u1", From: from, To: to, Granularity: "hour"}))
	if len(res.Series) != 24 {
		t.Fatalf("want 24 hour labels (01 counted once), got %d", len(res.Series))
	}
	for i, p := range res.Series {
		if want := fmt.Sprintf("2026-11-01T%02d", i); p.Bucket != want || p.Value != int64(i+1) {
			t.Fatalf("point %d: %+v, want bucket %s value %d", i, p, want, i+1)
		}
	}
	equal(t, "total buckets", res.TotalBuckets, []string{"2026-11-01"})
	equal(t, "total", res.Total, int64(7777))
}

func TestStatsExpiredBucketsAndValidation(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	res := must(f.r.Stats(ctx, StatsQuery{Stat: "revenue_cents", From: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		To: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC), Granularity: "day"}))
	if !res.Series[0].Expired || !res.TotalIncomplete {
		t.Fatalf("day keys of January 2025 expired (400d): %+v", res)
	}
	res = must(f.r.Stats(ctx, StatsQuery{Stat: "clicks", From: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		To: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Granularity: "hour"}))
	if res.Series[0].Expired || res.TotalIncomplete {
		t.Fatalf("yesterday's hours are not expired: %+v", res)
	}
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		q     StatsQuery
		param string
	}{
		{StatsQuery{Stat: "likes", From: jan, To: jan.AddDate(0, 1, 0), Granularity: "day"}, "stat"},
		{StatsQuery{Stat: "views", From: jan, To: jan.AddDate(0, 1, 0), Granularity: "week"}, "granularity"},
		{StatsQuery{Stat: "views", From: jan.Add(time.Hour), To: jan.AddDate(0, 1, 0), Granularity: "day"}, "from"},
		{StatsQuery{Stat: "views", From: jan, To: jan.Add(90 * time.Minute), Granularity: "hour"}, "to"},
		{StatsQuery{Stat: "views", From: jan, To: jan, Granularity: "hour"}, "to"},
		{StatsQuery{Stat: "views", From: jan, To: jan.AddDate(0, 2, 0), Granularity: "hour"}, "to"},
	} {
		_, err := f.r.Stats(ctx, c.q)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Param != c.param {
			t.Errorf("%+v: got %v, want an InputError about %s", c.q, err, c.param)
		}
	}
	f.r.cfg.Stats.Granularities = []string{"day"}
	_, err := f.r.Stats(ctx, StatsQuery{Stat: "views", From: jan, To: jan.AddDate(0, 1, 0), Granularity: "hour"})
	if err == nil || !strings.Contains(err.Error(), "enabled") {
		t.Fatalf("hour switched off: got %v", err)
	}
}

func TestParseTime(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	for in, want := range map[string]time.Time{
		"2026":                      time.Date(2026, 1, 1, 0, 0, 0, 0, ny),
		"2026-12":                   time.Date(2026, 12, 1, 0, 0, 0, 0, ny),
		"2026-12-02":                time.Date(2026, 12, 2, 0, 0, 0, 0, ny),
		"2026-12-02T08":             time.Date(2026, 12, 2, 8, 0, 0, 0, ny),
		"2026-12-02T08:00:00Z":      time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC),
		"1796227200000":             time.UnixMilli(1796227200000),
		"2026-12-02T08:00:00+01:00": time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC),
	} {
		got, ok := ParseTime(in, ny)
		if !ok || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-13", "2026-12-02T25", "12"} {
		if _, ok := ParseTime(bad, ny); ok {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}

func TestStatsRejectsHugeRangesBeforeWalking(t *testing.T) {
	f := newFixture(t, time.UTC)
	_, err := f.r.Stats(context.Background(), StatsQuery{Stat: "views", Granularity: "hour",
		From: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(ie.Problem, "about") {
		t.Fatalf("a century of hours: got %v", err)
	}
}
