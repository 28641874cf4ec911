package projections

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"projector/pkg/events"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func plan(t *testing.T, cfg Config, loc *time.Location, prefix string, ev events.Event) []Write {
	t.Helper()
	p, err := NewPlanner(cfg, loc, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return p.Plan(ev, now, nil)
}

func keys(ws []Write) string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Kind.String()+" "+w.Key)
	}
	return strings.Join(out, "\n")
}

func TestViewWritesEveryViewProjection(t *testing.T) {
	ts := time.Date(2026, 12, 2, 11, 15, 30, 0, time.UTC)
	ev := events.Event{ID: "e1", Type: events.View, TS: ts.UnixMilli(), UserID: "42", ProductID: "p1", Device: "-", StoreID: "-"}
	got := keys(plan(t, Defaults(), time.UTC, "shop:", ev))
	want := strings.Join([]string{
		"ZADDMAX shop:lv:{u:42}",
		"ZADDMAX shop:hist:{u:42}",
		"INCRBY shop:st:{u:42}:views:2026", "INCRBY shop:st:{u:42}:views:2026-12",
		"INCRBY shop:st:{u:42}:views:2026-12-02", "INCRBY shop:st:{u:42}:views:2026-12-02T11",
		"INCRBY shop:st:{g}:views:2026", "INCRBY shop:st:{g}:views:2026-12",
		"INCRBY shop:st:{g}:views:2026-12-02", "INCRBY shop:st:{g}:views:2026-12-02T11",
		"ZINCRBY shop:pv:{g}:2026-12-02",
		"ZINCRBY shop:trend:{g}:2026-12-02T11:15",
	}, "\n")
	if got != want {
		t.Errorf("writes:\n%s\nwant:\n%s", got, want)
	}
}

func TestBucketsFollowTheTimeZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// 2026-12-02T03:30Z is 22:30 on Dec 1 in New York.
	b := BucketsOf(time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC).UnixMilli(), ny)
	if b.Day != "2026-12-01" || b.Hour != "2026-12-01T22" || b.Minute != "2026-12-01T22:30" {
		t.Errorf("buckets = %+v", b)
	}
	if want := time.Date(2026, 12, 2, 0, 0, 0, 0, ny).UnixMilli(); b.DayEnd != want {
		t.Errorf("day end = %d, want %d (local midnight)", b.DayEnd, want)
	}
	if want := time.Date(2026, 12, 1, 23, 0, 0, 0, ny).UnixMilli(); b.HourEnd != want {
		t.Errorf("hour end = %d, want %d", b.HourEnd, want)
	}
}

func TestOrderWrites(t *testing.T) {
	ts := now.Add(-time.Minute)
	ev := events.Event{ID: "o1", Type: events.Order, TS: ts.UnixMilli(), UserID: "42",
		Items: []events.Item{{ProductID: "p1", Quantity: 2, PriceCents: 0}, {ProductID: "p2", Quantity: 1, PriceCents: 0}}}
	ws := plan(t, Defaults(), time.UTC, "", ev)
	var doc string
	for _, w := range ws {
		if strings.Contains(w.Key, "revenue_cents") {
			t.Errorf("zero revenue wrote %s", w.Key)
		}
		if w.Kind == SetValue {
			doc = w.Value
			if w.ExpireAt != ts.Add(90*Day).UnixMilli() {
				t.Errorf("order expiry %d", w.ExpireAt)
			}
		}
	}
	want := fmt.Sprintf(`{"id":"o1","user_id":"42","ts":%d,"items":[{"product_id":"p1","quantity":2,"price_cents":0},{"product_id":"p2","quantity":1,"price_cents":0}],"total_cents":0}`, ts.UnixMilli())
	if doc != want {
		t.Errorf("order doc %s\nwant %s", doc, want)
	}
}

func TestExpiredWritesAreLeftOut(t *testing.T) {
	old := now.Add(-10 * Day) // trending (2h), recent (1h), hour stats (8d), bestsellers (8d) expired
	ev := events.Event{ID: "o1", Type: events.Order, TS: old.UnixMilli(), UserID: "42",
		Items: []events.Item{{ProductID: "p1", Quantity: 1, PriceCents: 5}}}
	for _, w := range plan(t, Defaults(), time.UTC, "", ev) {
		if w.ExpireAt != 0 && w.ExpireAt <= now.UnixMilli() {
			t.Errorf("write %s %s expires in the past", w.Kind, w.Key)
		}
		if strings.HasPrefix(w.Key, "best:") || strings.HasPrefix(w.Key, "recent:") || strings.HasSuffix(w.Key, "T"+old.Format("15")) {
			t.Errorf("expired key written: %s", w.Key)
		}
	}
}

func TestScopedHistoryAndClear(t *testing.T) {
	cfg := Defaults()
	cfg.History.Scope = []string{"device", "store"}
	ts := now.Add(-time.Hour).UnixMilli()
	v := events.Event{ID: "e1", Type: events.View, TS: ts, UserID: "42", ProductID: "p1", Device: "ios", StoreID: "s1"}
	got := keys(plan(t, cfg, time.UTC, "", v))
	if !strings.Contains(got, "SADD px:hk:{u:42}\nZADDMAX hist:{u:42}:ios:s1") {
		t.Errorf("scoped view writes:\n%s", got)
	}
	c := events.Event{ID: "c1", Type: events.HistoryCleared, TS: ts, UserID: "42"}
	ws := plan(t, cfg, time.UTC, "", c)
	if len(ws) != 3 || ws[1].Kind != SetMax || ws[2].Registry != "px:hk:{u:42}" {
		t.Errorf("clear writes: %+v", ws)
	}
	if ws[1].ExpireAt != ts+(90*Day).Milliseconds() {
		t.Errorf("histclr expiry uses the longer retention: %d", ws[1].ExpireAt)
	}
}

func TestDisabledProjectionsWriteNothing(t *testing.T) {
	var cfg Config // all off
	cfg.Stats = Defaults().Stats
	cfg.Stats.Granularities = []string{"day"}
	ev := events.Event{ID: "e1", Type: events.Click, TS: now.UnixMilli(), UserID: "42"}
	got := keys(plan(t, cfg, time.UTC, "", ev))
	if got != "INCRBY st:{u:42}:clicks:2026-12-02\nINCRBY st:{g}:clicks:2026-12-02" {
		t.Errorf("writes:\n%s", got)
	}
}

// Every event's user writes come before its global ones, and a planner that
// has cached an hour's global keys plans exactly what a new planner (which
// builds every key) plans, for every event type, prefix and time zone.
func TestPlanOrderAndCachedKeys(t *testing.T) {
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	items := []events.Item{{ProductID: "p1", Quantity: 2, PriceCents: 150}, {ProductID: "p2", Quantity: 1, PriceCents: 99}}
	types := []events.Event{
		{Type: events.View, ProductID: "p1", Device: "d", StoreID: "s"},
		{Type: events.Click, TargetID: "t"},
		{Type: events.Order, Items: items},
		{Type: events.HistoryCleared},
		{Type: events.HistoryItemRemoved, ProductID: "p1"},
	}
	scoped := Defaults()
	scoped.History.Scope = []string{"device", "store"}
	cached := 0
	for _, cfg := range []Config{Defaults(), scoped} {
		for _, loc := range []*time.Location{time.UTC, kolkata} {
			for _, prefix := range []string{"", "shop:"} {
				warm, err := NewPlanner(cfg, loc, prefix)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 200 {
					ev := types[i%len(types)]
					ev.ID, ev.UserID = fmt.Sprintf("e%d", i), fmt.Sprintf("u%d", i%7)
					ev.TS = now.Add(-time.Duration(i*37) * time.Second).UnixMilli()
					got := warm.Plan(ev, now, nil)
					if _, g, _ := warm.buckets(ev.TS); g != nil {
						cached++
					}
					if want := plan(t, cfg, loc, prefix, ev); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("%s event at %d: warm planner\n%v\nnew planner\n%v", ev.Type, ev.TS, got, want)
					}
					for j := 1; j < len(got); j++ {
						if got[j-1].Global && !got[j].Global {
							t.Fatalf("%s event: user write %s after global write %s", ev.Type, got[j].Key, got[j-1].Key)
						}
					}
				}
			}
		}
	}
	if cached == 0 {
		t.Fatal("no event was planned from a cached hour")
	}
}

// Every key builder gives <prefix><kind>:{u:<user>}[...] or <prefix><kind>:{g}[...].
func TestKeysLayout(t *testing.T) {
	for _, k := range []Keys{{}, {Prefix: "shop:"}} {
		u, g := func(kind string) string { return k.User(kind, "42") }, k.Global
		for got, want := range map[string]string{
			k.LastViewed("42"):                u("lv"),
			k.History("42", "d", "s", true):   u("hist") + ":d:s",
			k.History("42", "d", "s", false):  u("hist"),
			k.HistoryCleared("42"):            u("histclr"),
			k.HistoryRegistry("42"):           u("px:hk"),
			k.UserStat("42", "views", "2026"): u("st") + ":views:2026",
			k.GlobalStat("views", "2026"):     g("st") + ":views:2026",
			k.Bestsellers("2026-12-02"):       g("best") + ":2026-12-02",
			k.ProductViews("2026-12-02"):      g("pv") + ":2026-12-02",
			k.RecentOrders():                  g("recent"),
			k.Order("42", "o1"):               u("order") + ":o1",
			k.Orders("42"):                    u("orders"),
			k.Trending("2026-12-02T11:15"):    g("trend") + ":2026-12-02T11:15",
			k.Seen("42", "2026-12-02"):        u("px:seen") + ":2026-12-02",
			k.Watermarks():                    g("px:wm"),
			k.Meta():                          g("px:meta"),
		} {
			if got != want {
				t.Errorf("prefix %q: key %q, want %q", k.Prefix, got, want)
			}
		}
	}
	if got := (Keys{Prefix: "p:"}).UserStat("42", "views", "2026"); got != "p:st:{u:42}:views:2026" {
		t.Errorf("UserStat = %q", got)
	}
}

// TestUserStatKeysSharedBuild: the user counter keys built in one allocation
// equal Keys.UserStat for every subset of granularities, with and without a
// key prefix, for every stat of an order.
func TestUserStatKeysSharedBuild(t *testing.T) {
	grans := []string{"year", "month", "day", "hour"}
	ts := time.Date(2026, 12, 2, 11, 15, 30, 0, time.UTC)
	ev := events.Event{ID: "o1", Type: events.Order, TS: ts.UnixMilli(), UserID: "u7", Items: []events.Item{{ProductID: "p1", Quantity: 2, PriceCents: 150}}}
	for mask := 1; mask < 16; mask++ {
		cfg := Defaults()
		cfg.Stats.Granularities = nil
		for i, g := range grans {
			if mask&(1<<i) != 0 {
				cfg.Stats.Granularities = append(cfg.Stats.Granularities, g)
			}
		}
		for _, prefix := range []string{"", "shop:"} {
			k := Keys{Prefix: prefix}
			buckets := map[string]string{"year": "2026", "month": "2026-12", "day": "2026-12-02", "hour": "2026-12-02T11"}
			var want []string
			for _, stat := range []string{"orders", "units", "revenue_cents"} {
				for _, g := range cfg.Stats.Granularities {
					want = append(want, k.UserStat(ev.UserID, stat, buckets[g]))
				}
			}
			var got []string
			for _, w := range plan(t, cfg, time.UTC, prefix, ev) {
				if w.Kind == IncrBy && !w.Global {
					got = append(got, w.Key)
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("granularities %v, prefix %q:\n got %v\nwant %v", cfg.Stats.Granularities, prefix, got, want)
			}
		}
	}
}
