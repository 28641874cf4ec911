package refmodel

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/gen"
	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// liveBase is a logical "now" a day ahead of the wall clock, so that every
// expiry written relative to it is still in the future for the real server.
func liveBase() int64 {
	return time.Now().Add(24 * time.Hour).Truncate(time.Hour).UnixMilli()
}

// handState writes a small state with plain commands and returns what
// Compare must consider equal to it.
func handState(ctx context.Context, t *testing.T, rdb redis.Cmdable, base int64) State {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	must(rdb.ZAdd(ctx, "lv:{u:u*1}", redis.Z{Score: float64(base - hour), Member: "a"}, redis.Z{Score: float64(base), Member: "b"}).Err())
	must(rdb.PExpireAt(ctx, "lv:{u:u*1}", at(base+90*day)).Err())
	must(rdb.Set(ctx, "st:{g}:views:2026", "17", 0).Err())
	must(rdb.Set(ctx, "st:{g}:views:2026-03-01", "5", 0).Err())
	must(rdb.PExpireAt(ctx, "st:{g}:views:2026-03-01", at(base+400*day)).Err())
	must(rdb.ZAdd(ctx, "pv:{g}:2026-03-01", redis.Z{Score: 3, Member: "p1"}, redis.Z{Score: 1, Member: "p@2"}).Err())
	must(rdb.PExpireAt(ctx, "pv:{g}:2026-03-01", at(base+8*day)).Err())
	must(rdb.Set(ctx, "order:{u:u*1}:e1", `{"id":"e1"}`, 0).Err())
	must(rdb.PExpireAt(ctx, "order:{u:u*1}:e1", at(base+90*day)).Err())
	must(rdb.HSet(ctx, "px:seen:{u:u*1}:2026-03-01", "e1", "0:1").Err()) // bookkeeping: ignored
	return State{
		"lv:{u:u*1}":              zset(base+90*day, "a", base-hour, "b", base),
		"st:{g}:views:2026":       num(17, 0),
		"st:{g}:views:2026-03-01": num(5, base+400*day),
		"pv:{g}:2026-03-01":       zset(base+8*day, "p1", 3, "p@2", 1),
		"order:{u:u*1}:e1":        str(`{"id":"e1"}`, base+90*day),
	}
}

func TestCompareAgainstRedis(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	base := liveBase()
	want := handState(ctx, t, rdb, base)
	opts := Options{Projections: projections.Defaults(), Now: time.UnixMilli(base)}
	tol := time.Second
	if d := Compare(ctx, rdb, want, opts, tol); len(d) != 0 {
		t.Fatalf("equal state reported different:\n%s", strings.Join(d, "\n"))
	}

	// Dead entries (own ts + retention <= Now) are ignored on both sides.
	dead := float64(base - 91*day)
	rdb.ZAdd(ctx, "lv:{u:u*1}", redis.Z{Score: dead, Member: "old"})
	rdb.ZAdd(ctx, "hist:{u:u2}", redis.Z{Score: dead, Member: "x@2025-12-01"})
	rdb.PExpireAt(ctx, "hist:{u:u2}", time.UnixMilli(base+hour))
	want["recent:{g}"] = zset(base-30*minute, "e9", base-2*hour) // only dead entries, missing in Redis
	if d := Compare(ctx, rdb, want, opts, tol); len(d) != 0 {
		t.Fatalf("dead entries reported:\n%s", strings.Join(d, "\n"))
	}

	// An expiry within tol is equal.
	rdb.PExpireAt(ctx, "pv:{g}:2026-03-01", time.UnixMilli(base+8*day+500))
	if d := Compare(ctx, rdb, want, opts, tol); len(d) != 0 {
		t.Fatalf("expiry within tolerance reported:\n%s", strings.Join(d, "\n"))
	}

	// Perturb and expect one line per difference.
	rdb.ZAdd(ctx, "lv:{u:u*1}", redis.Z{Score: float64(base + 1), Member: "b"})
	rdb.ZAdd(ctx, "lv:{u:u*1}", redis.Z{Score: float64(base - 1), Member: "c"})
	rdb.PExpireAt(ctx, "st:{g}:views:2026-03-01", time.UnixMilli(base+401*day))
	rdb.Persist(ctx, "order:{u:u*1}:e1")
	rdb.PExpireAt(ctx, "st:{g}:views:2026", time.UnixMilli(base+day))
	rdb.Set(ctx, "st:{u:u9}:clicks:2026", "1", 0)
	rdb.Del(ctx, "pv:{g}:2026-03-01")
	want["best:{g}:2026-03-01"] = str("1", 0)
	rdb.ZAdd(ctx, "best:{g}:2026-03-01", redis.Z{Score: 1, Member: "p1"})
	rdb.Set(ctx, "histclr:{u:u*1}", "123", 0)
	want["histclr:{u:u*1}"] = str("124", 0)
	got := Compare(ctx, rdb, want, opts, tol)
	wantLines := []string{
		`key best:{g}:2026-03-01: type zset, want string`,
		`key histclr:{u:u*1}: value "123", want "124"`,
		`key lv:{u:u*1}: extra member "c"`,
		`key lv:{u:u*1}: member "b" score`,
		`key order:{u:u*1}:e1: no expiry, want`,
		`key st:{g}:views:2026-03-01: expires at`,
		`key st:{g}:views:2026: expires at`,
		`missing key pv:{g}:2026-03-01`,
		`extra key st:{u:u9}:clicks:2026`,
	}
	if len(got) != len(wantLines) {
		t.Errorf("got %d diff lines, want %d:\n%s", len(got), len(wantLines), strings.Join(got, "\n"))
	}
	for _, w := range wantLines {
		if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, w) }) {
			t.Errorf("no diff line starting %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}

	// A member removed from Redis shows as missing.
	rdb.ZRem(ctx, "lv:{u:u*1}", "a")
	if got := Compare(ctx, rdb, want, opts, tol); !slices.ContainsFunc(got, func(l string) bool {
		return strings.HasPrefix(l, `key lv:{u:u*1}: missing member "a"`)
	}) {
		t.Errorf("missing member not reported:\n%s", strings.Join(got, "\n"))
	}
}

func TestCompareKeyPrefix(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	opts := Options{Projections: projections.Defaults(), KeyPrefix: "shop:"}
	rdb.Set(ctx, "shop:px:meta:{g}", "1", 0)       // bookkeeping: ignored
	rdb.Set(ctx, "px:meta:{g}", "1", 0)            // not under the prefix: reported
	rdb.Set(ctx, "shop:st:{g}:views:2026", "1", 0) // wanted
	want := State{"shop:st:{g}:views:2026": num(1, 0)}
	got := Compare(ctx, rdb, want, opts, time.Second)
	if len(got) != 1 || !strings.HasPrefix(got[0], "extra key px:meta:{g}") {
		t.Errorf("diff = %q, want one extra key px:meta:{g}", got)
	}
}

// TestCompareRoundTrip writes a modelled generated log to Redis key by key
// and expects no difference, on a standalone server and on a cluster.
func TestCompareRoundTrip(t *testing.T) {
	ctx := context.Background()
	cfg := gen.DefaultConfig()
	now := time.Now().Truncate(time.Millisecond)
	cfg.Start = now.Add(-12 * time.Hour) // some expiries (trending, recent) lie in the past
	cfg.Span = 10 * 24 * time.Hour
	opts := Options{Projections: projections.Defaults(), Location: newYork(t), Now: now}
	opts.Projections.History.Scope = []string{"device", "store"}
	want := Expected(opts, gen.New(cfg).Log(3000))
	if len(want) < 1000 {
		t.Fatalf("only %d keys modelled", len(want))
	}
	standalone := testredis.StartStandalone(t).Client()
	cluster := testredis.StartCluster(t, 3).Client()
	for name, rdb := range map[string]redis.UniversalClient{"standalone": standalone, "cluster": cluster} {
		writeState(ctx, t, rdb, want)
		if d := Compare(ctx, rdb, want, opts, 0); len(d) != 0 {
			t.Errorf("%s: round trip differs (%d lines):\n%s", name, len(d), strings.Join(d[:min(len(d), 20)], "\n"))
		}
		got, err := Dump(ctx, rdb, opts)
		if err != nil || len(got) != len(want) {
			t.Errorf("%s: Dump returned %d keys (err %v), want %d", name, len(got), err, len(want))
		}
	}
}

// writeState writes s with SET/ZADD and PEXPIREAT.
func writeState(ctx context.Context, t *testing.T, rdb redis.UniversalClient, s State) {
	t.Helper()
	pipe := rdb.Pipeline()
	for k, v := range s {
		switch v.Kind {
		case KindString:
			pipe.Set(ctx, k, v.Str, 0)
		case KindZSet:
			zs := make([]redis.Z, 0, len(v.ZSet))
			for m, sc := range v.ZSet {
				zs = append(zs, redis.Z{Score: sc, Member: m})
			}
			pipe.ZAdd(ctx, k, zs...)
		}
		if v.ExpireAtMs != 0 {
			pipe.PExpireAt(ctx, k, time.UnixMilli(v.ExpireAtMs))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("write state: %v", err)
	}
}

func TestDiffDeadBoundary(t *testing.T) {
	now := t0 + 100*day
	opts := Options{Projections: projections.Defaults(), Now: time.UnixMilli(now)}
	want := State{"lv:{u:u1}": zset(now+day, "live", now-89*day)}
	got := State{"lv:{u:u1}": zset(now+day, "live", now-89*day, "dead", now-90*day, "justlive", now-90*day+1)}
	d := Diff(want, got, opts, 0)
	if len(d) != 1 || !strings.HasPrefix(d[0], `key lv:{u:u1}: extra member "justlive"`) {
		t.Errorf("diff = %q, want only the extra live member", d)
	}
	// A key whose entries are all dead may be missing on either side.
	deadOnly := State{"orders:{u:u1}": zset(now+day, "e1", now-90*day)}
	if d := Diff(deadOnly, State{}, opts, 0); len(d) != 0 {
		t.Errorf("dead-only key missing in got reported: %q", d)
	}
	if d := Diff(State{}, deadOnly, opts, 0); len(d) != 0 {
		t.Errorf("dead-only key extra in got reported: %q", d)
	}
	// Other kinds of keys have no dead entries.
	pv := State{"pv:{g}:2026-03-01": zset(now+day, "p1", 1)}
	if d := Diff(State{}, pv, opts, 0); len(d) != 1 {
		t.Errorf("extra pv key: diff %q", d)
	}
}
