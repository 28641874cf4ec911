package sizing

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"projector/internal/testing/testredis"
)

// envInt reads a positive integer knob from the environment.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// measure applies sc to a fresh redis-server and measures its memory.
func measure(t *testing.T, sc Scenario, now time.Time) Result {
	t.Helper()
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	before, err := Measure(ctx, rdb, "")
	if err != nil {
		t.Fatal(err)
	}
	ap, err := Load(ctx, rdb, sc, now)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Measure(ctx, rdb, "")
	if err != nil {
		t.Fatal(err)
	}
	r := Result{Scenario: sc, Applied: ap, Before: before, After: after}
	var b strings.Builder
	if err := Format(&b, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
	return r
}

// TestSizing measures Redis memory after one day and after several days of
// generated traffic (knobs: SIZING_USERS, SIZING_DAYS, SIZING_EVENTS per user
// per day, SIZING_PRODUCTS) and checks the figures are within sane bounds.
func TestSizing(t *testing.T) {
	base := Scenario{Users: envInt(t, "SIZING_USERS", 1000), Products: envInt(t, "SIZING_PRODUCTS", 2000),
		EventsPerUserDay: envInt(t, "SIZING_EVENTS", 20), Seed: 7, Batch: 2000}
	days := envInt(t, "SIZING_DAYS", 7)
	if days < 2 {
		t.Fatalf("SIZING_DAYS=%d: want at least 2 (one day is always measured)", days)
	}
	now := time.Now()
	one, several := base, base
	one.Days, several.Days = 1, days
	r1, rn := measure(t, one, now), measure(t, several, now)

	for _, r := range []Result{r1, rn} {
		for _, fam := range []string{"lv:{u}", "hist:{u}", "st:{u}:hour", "st:{u}:day", "st:{u}:month", "st:{u}:year",
			"order:{u}", "orders:{u}", "st:{g}:hour", "st:{g}:day",
			"best:{g}", "pv:{g}", "recent:{g}", "trend:{g}", "px:seen:{u}", "px:wm:{g}", "px:meta:{g}"} {
			if r.After.Families[fam].Keys == 0 {
				t.Errorf("%d day(s): no %s keys", r.Scenario.Days, fam)
			}
		}
		if _, ok := r.After.Families["other"]; ok {
			t.Errorf("%d day(s): keys outside the projector families: %+v", r.Scenario.Days, r.After.Families["other"])
		}
		if r.Applied.Events < r.Scenario.Records()/2 || r.Applied.Users < r.Scenario.Users/2 {
			t.Errorf("%d day(s): applied %d events of %d users; want most of %d records and %d users",
				r.Scenario.Days, r.Applied.Events, r.Applied.Users, r.Scenario.Records(), r.Scenario.Users)
		}
		checkBound(t, r, "per-user bytes per user", r.Per(PerUser), 100, 1<<20)
		checkBound(t, r, "global bytes per day", r.Per(Global), 1<<10, 256<<20)
		checkBound(t, r, "marker bytes per event", r.Per(Markers), 8, 100) // 71.5 measured: the event id is the field
		sum := r.After.Total(PerUser).Bytes + r.After.Total(Global).Bytes + r.After.Total(Markers).Bytes
		checkBound(t, r, "used_memory growth / MEMORY USAGE sum", float64(r.UsedDelta())/float64(sum), 0.5, 4)
	}
	// Hour and day counters accumulate: several days cost a user more than one.
	if rn.Per(PerUser) <= r1.Per(PerUser) {
		t.Errorf("per-user bytes after %d days (%.0f) not above one day's (%.0f)", days, rn.Per(PerUser), r1.Per(PerUser))
	}
}

// TestMarkerSizing measures the idempotency markers as most producers see
// them: 36-character UUID event ids, one day of traffic, with
// idempotency.window 1h and 24h; it reports their bytes per applied event
// and how long their keys live, and checks that every marker key lives at
// least the window (a duplicate within it is caught).
func TestMarkerSizing(t *testing.T) {
	for _, window := range []time.Duration{time.Hour, 24 * time.Hour} {
		sc := Scenario{Users: envInt(t, "SIZING_USERS", 1000), Products: 2000, EventsPerUserDay: envInt(t, "SIZING_EVENTS", 20),
			Days: 1, Seed: 7, Batch: 2000, Window: window, UUIDs: true}
		r := measure(t, sc, time.Now())
		if len(r.After.Markers) == 0 {
			t.Fatalf("window %v: no marker keys", window)
		}
		for _, k := range r.After.Markers {
			if k.TTL < window-time.Minute {
				t.Fatalf("window %v: a marker key lives %v more, less than the window", window, k.TTL)
			}
		}
		checkBound(t, r, "marker bytes per event", r.Per(Markers), 8, 1<<10)
	}
}

func checkBound(t *testing.T, r Result, what string, got, lo, hi float64) {
	t.Helper()
	if !(got > lo && got < hi) {
		t.Errorf("%d day(s): %s = %.2f, want in (%g, %g)", r.Scenario.Days, what, got, lo, hi)
	}
}

func TestFamily(t *testing.T) {
	for _, c := range []struct {
		key, prefix, fam string
		class            Class
	}{
		{"lv:{u:u1}", "", "lv:{u}", PerUser},
		{"app:st:{u:u1}:views:2026-12-02T08", "app:", "st:{u}:hour", PerUser},
		{"st:{u:u1}:revenue_cents:2026-12-02", "", "st:{u}:day", PerUser},
		{"st:{g}:views:2026", "", "st:{g}:year", Global},
		{"st:{g}:orders:2026-12", "", "st:{g}:month", Global},
		{"st:{g}:orders:bad", "", "other", 0},
		{"px:seen:{u:u1}:2026-12-02", "", "px:seen:{u}", Markers},
		{"px:wm:{g}", "", "px:wm:{g}", Bookkeeping},
		{"trend:{g}:2026-12-02T08:01", "", "trend:{g}", Global},
		{"plain", "", "other", 0},
		{"x:{", "", "other", 0},
	} {
		fam, class := Family(c.key, c.prefix)
		if fam != c.fam || class != c.class {
			t.Errorf("Family(%q, %q) = %q, %v; want %q, %v", c.key, c.prefix, fam, class, c.fam, c.class)
		}
	}
}
