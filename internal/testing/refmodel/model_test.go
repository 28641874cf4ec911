package refmodel

import (
	"strings"
	"testing"
	"time"

	"projector/internal/gen"
	"projector/pkg/projections"
)

func TestLastViewedCapAndTieOrder(t *testing.T) {
	cfg := only("last_viewed")
	cfg.LastViewed.Size = 3
	b := &logBuilder{t: t}
	b.view("u1", "a", t0+1)
	b.view("u1", "b", t0+2)
	b.view("u1", "c", t0+2)
	b.view("u1", "d", t0+2) // 4 members: a (lowest score) goes
	b.view("u1", "e", t0+2) // b, c, d, e tie: b (smallest member) goes
	b.view("u1", "c", t0+1) // older view: c keeps t0+2
	b.view("u1", "a", t0)   // added, then trimmed at once
	b.view("u1", "f", t0+3) // c goes
	s := Expected(Options{Projections: cfg}, b.log)
	assertKeys(t, s, "lv:{u:u1}")
	assertKey(t, s, "lv:{u:u1}", zset(t0+3+90*day, "d", t0+2, "e", t0+2, "f", t0+3))
}

func TestLastViewedRetention(t *testing.T) {
	cfg := only("last_viewed")
	cfg.LastViewed.TTL = time.Hour
	b := &logBuilder{t: t}
	b.view("u1", "a", t0)
	b.view("u1", "b", t0+30*minute)
	b.view("u1", "c", t0+2*hour)    // a and b are older than newest - 1h
	b.view("u1", "d", t0+59*minute) // older than newest - 1h: removed at once
	b.view("u1", "e", t0+hour)      // exactly newest - 1h: kept
	s := Expected(Options{Projections: cfg}, b.log)
	assertKey(t, s, "lv:{u:u1}", zset(t0+3*hour, "c", t0+2*hour, "e", t0+hour))
}

func TestHistoryEntryPerProductPerDayAndCap(t *testing.T) {
	cfg := only("history")
	cfg.History.Size = 2
	b := &logBuilder{t: t}
	b.view("u1", "p1", t0+10*hour)
	b.view("u1", "p1", t0+12*hour) // same day: score moves to the latest view
	b.view("u1", "p2", t0+11*hour)
	b.view("u1", "p1", t0+9*hour)     // older view the same day: score stays
	b.view("u1", "p1", t0+day+9*hour) // next day: a second entry; p2 is now the oldest of 3
	s := Expected(Options{Projections: cfg}, b.log)
	assertKeys(t, s, "hist:{u:u1}")
	assertKey(t, s, "hist:{u:u1}", zset(t0+day+9*hour+30*day,
		"p1@2026-03-01", t0+12*hour, "p1@2026-03-02", t0+day+9*hour))

	// Days are local: 2026-03-01T03:00Z is 2026-02-28 in New York.
	b = &logBuilder{t: t}
	b.view("u1", "p1", t0+3*hour)
	b.view("u1", "p1", t0+6*hour)
	s = Expected(Options{Projections: cfg, Location: newYork(t)}, b.log)
	assertKey(t, s, "hist:{u:u1}", zset(t0+6*hour+30*day, "p1@2026-02-28", t0+3*hour, "p1@2026-03-01", t0+6*hour))
}

func TestHistoryCleared(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u1", "a", t0+1*hour)
	b.view("u1", "b", t0+5*hour)
	b.cleared("u1", t0+3*hour)   // removes a from lv and history
	b.view("u1", "c", t0+2*hour) // at or before the clear: ignored by lv and history
	b.view("u1", "c", t0+4*hour) // after the clear: added
	b.cleared("u1", t0+2*hour)   // older clear: histclr keeps t0+3h, removes nothing
	b.click("u1", t0+3*hour)     // unrelated
	b.view("u1", "b", t0+3*hour) // ignored (<= clear), b keeps t0+5h
	s := Expected(Options{Projections: projections.Defaults()}, b.log)
	assertKey(t, s, "lv:{u:u1}", zset(t0+5*hour+90*day, "b", t0+5*hour, "c", t0+4*hour))
	assertKey(t, s, "hist:{u:u1}", zset(t0+5*hour+30*day, "b@2026-03-01", t0+5*hour, "c@2026-03-01", t0+4*hour))
	assertKey(t, s, "histclr:{u:u1}", num(t0+3*hour, t0+3*hour+90*day))
	// Ignored views still count everywhere else.
	assertKey(t, s, "st:{u:u1}:views:2026-03-01", num(5, t0+day+400*day))
	assertKey(t, s, "pv:{g}:2026-03-01", zset(t0+day+8*day, "a", 1, "b", 2, "c", 2))

	// A clear that removes every member deletes the keys (a member at exactly
	// the clear ts included); a later view starts afresh.
	b.view("u1", "x", t0+6*hour)
	b.cleared("u1", t0+6*hour)
	b.view("u1", "d", t0+5*hour+30*minute) // ignored
	b.view("u1", "y", t0+6*hour)           // ignored: exactly the clear ts
	b.view("u1", "e", t0+7*hour)
	s = Expected(Options{Projections: projections.Defaults()}, b.log)
	assertKey(t, s, "lv:{u:u1}", zset(t0+7*hour+90*day, "e", t0+7*hour))
	assertKey(t, s, "hist:{u:u1}", zset(t0+7*hour+30*day, "e@2026-03-01", t0+7*hour))
	assertKey(t, s, "histclr:{u:u1}", num(t0+6*hour, t0+6*hour+90*day))
}

func TestHistoryItemRemoved(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u1", "p", t0+10*hour)
	b.view("u1", "p", t0+34*hour)
	b.view("u1", "q", t0+35*hour)
	b.view("u1", "p@b", t0+11*hour)   // a product whose id starts with "p@"
	b.removed("u1", "p", t0+33*hour)  // removes p@2026-03-01 only; lv p (34h) stays
	b.removed("u1", "p", t0+40*hour)  // removes p@2026-03-02 and lv p
	b.view("u1", "p", t0+36*hour)     // arrives later: added again
	b.removed("u1", "zz", t0+50*hour) // nothing to remove
	b.view("u1", "r", t0+45*hour)
	b.removed("u1", "r", t0+44*hour) // r is newer than the removal: stays
	s := Expected(Options{Projections: only("last_viewed", "history")}, b.log)
	assertKeys(t, s, "lv:{u:u1}", "hist:{u:u1}")
	assertKey(t, s, "lv:{u:u1}", zset(t0+45*hour+90*day, "p", t0+36*hour, "q", t0+35*hour, "p@b", t0+11*hour, "r", t0+45*hour))
	assertKey(t, s, "hist:{u:u1}", zset(t0+45*hour+30*day,
		"p@2026-03-02", t0+36*hour, "q@2026-03-02", t0+35*hour, "p@b@2026-03-01", t0+11*hour, "r@2026-03-02", t0+45*hour))
}

func TestRemovingLastMemberDeletesKey(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u2", "a", t0+10)
	b.removed("u2", "a", t0+20)
	s := Expected(Options{Projections: only("last_viewed", "history")}, b.log)
	assertKeys(t, s)
	b.view("u2", "b", t0+5) // the deleted key's expiry is gone with it
	s = Expected(Options{Projections: only("last_viewed", "history")}, b.log)
	assertKey(t, s, "lv:{u:u2}", zset(t0+5+90*day, "b", t0+5))
	assertKey(t, s, "hist:{u:u2}", zset(t0+5+30*day, "b@2026-03-01", t0+5))
}

func TestScopedHistory(t *testing.T) {
	cfg := only("last_viewed", "history")
	cfg.History.Scope = []string{"device", "store"}
	b := &logBuilder{t: t}
	b.view("u1", "a", t0+1*hour, "device", "ios", "store_id", "s1")
	b.view("u1", "b", t0+2*hour, "store_id", "s2")
	b.view("u1", "c", t0+3*hour)
	b.view("u1", "a", t0+4*hour, "device", "ios", "store_id", "s1")
	s := Expected(Options{Projections: cfg}, b.log)
	assertKeys(t, s, "lv:{u:u1}", "hist:{u:u1}:ios:s1", "hist:{u:u1}:-:s2", "hist:{u:u1}:-:-")
	assertKey(t, s, "hist:{u:u1}:ios:s1", zset(t0+4*hour+30*day, "a@2026-03-01", t0+4*hour))

	b.removed("u1", "a", t0+5*hour)               // empties ios:s1
	b.cleared("u1", t0+2*hour+30*minute)          // empties -:s2
	b.view("u1", "b", t0+2*hour, "device", "web") // ignored
	s = Expected(Options{Projections: cfg}, b.log)
	assertKeys(t, s, "lv:{u:u1}", "hist:{u:u1}:-:-", "histclr:{u:u1}")
	assertKey(t, s, "hist:{u:u1}:-:-", zset(t0+3*hour+30*day, "c@2026-03-01", t0+3*hour))
	assertKey(t, s, "lv:{u:u1}", zset(t0+4*hour+90*day, "c", t0+3*hour))
	assertKey(t, s, "histclr:{u:u1}", num(t0+2*hour+30*minute, t0+2*hour+30*minute+90*day))
}

func TestStatsBucketsUTCAndNewYork(t *testing.T) {
	ts1 := time.Date(2026, 3, 2, 3, 30, 0, 0, time.UTC).UnixMilli() // 2026-03-01T22:30 EST
	ts2 := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC).UnixMilli()  // 2025-12-31T21:00 EST
	at := func(y int, m time.Month, d, h int) int64 { return time.Date(y, m, d, h, 0, 0, 0, time.UTC).UnixMilli() }
	b := &logBuilder{t: t}
	b.order("u1", ts1, item{"p1", 2, 150}, item{"p2", 1, 0})
	b.click("u1", ts2)

	s := Expected(Options{Projections: only("stats")}, b.log)
	if len(s) != 32 {
		t.Errorf("UTC: %d keys, want 32:\n%s", len(s), s.Format())
	}
	for _, scope := range []string{"{u:u1}", "{g}"} {
		p := "st:" + scope + ":"
		assertKey(t, s, p+"orders:2026", num(1, 0))
		assertKey(t, s, p+"units:2026-03", num(3, 0))
		assertKey(t, s, p+"revenue_cents:2026-03-02", num(300, at(2026, 3, 3, 0)+400*day))
		assertKey(t, s, p+"revenue_cents:2026-03-02T03", num(300, at(2026, 3, 2, 4)+8*day))
		assertKey(t, s, p+"clicks:2026-01-01", num(1, at(2026, 1, 2, 0)+400*day))
		assertKey(t, s, p+"clicks:2026-01-01T02", num(1, at(2026, 1, 1, 3)+8*day))
	}

	s = Expected(Options{Projections: only("stats"), Location: newYork(t)}, b.log)
	if len(s) != 32 {
		t.Errorf("New York: %d keys, want 32:\n%s", len(s), s.Format())
	}
	for _, scope := range []string{"{u:u1}", "{g}"} {
		p := "st:" + scope + ":"
		assertKey(t, s, p+"orders:2026", num(1, 0))
		assertKey(t, s, p+"units:2026-03", num(3, 0))
		assertKey(t, s, p+"units:2026-03-01", num(3, at(2026, 3, 2, 5)+400*day))
		assertKey(t, s, p+"revenue_cents:2026-03-01T22", num(300, at(2026, 3, 2, 4)+8*day))
		assertKey(t, s, p+"clicks:2025", num(1, 0))
		assertKey(t, s, p+"clicks:2025-12", num(1, 0))
		assertKey(t, s, p+"clicks:2025-12-31", num(1, at(2026, 1, 1, 5)+400*day))
		assertKey(t, s, p+"clicks:2025-12-31T21", num(1, at(2026, 1, 1, 3)+8*day))
	}
}

func TestStatsGranularitySubset(t *testing.T) {
	cfg := only("stats")
	cfg.Stats.Granularities = []string{"day"}
	b := &logBuilder{t: t}
	b.click("u1", t0+5)
	b.click("u1", t0+day-1) // last ms of the day
	b.click("u1", t0+day)   // first ms of the next
	s := Expected(Options{Projections: cfg}, b.log)
	assertKeys(t, s, "st:{u:u1}:clicks:2026-03-01", "st:{g}:clicks:2026-03-01", "st:{u:u1}:clicks:2026-03-02", "st:{g}:clicks:2026-03-02")
	assertKey(t, s, "st:{g}:clicks:2026-03-01", num(2, t0+day+400*day))
}

func TestZeroIncrementWritesNothing(t *testing.T) {
	b := &logBuilder{t: t}
	b.order("u1", t0+hour, item{"p1", 2, 0})
	s := Expected(Options{Projections: only("stats", "orders")}, b.log)
	for k := range s {
		if strings.Contains(k, "revenue_cents") {
			t.Errorf("zero revenue wrote %s", k)
		}
	}
	assertKey(t, s, "st:{g}:units:2026", num(2, 0))
	assertKey(t, s, "order:{u:u1}:e1", str(`{"id":"e1","user_id":"u1","ts":1772326800000,"items":[{"product_id":"p1","quantity":2,"price_cents":0}],"total_cents":0}`, t0+hour+90*day))
}

func TestExpiredWritesAreSkipped(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u1", "p1", t0+1*hour)
	b.order("u1", t0+2*hour, item{"p1", 1, 100})
	b.click("u1", t0+3*hour)
	s := Expected(Options{Projections: projections.Defaults(), Now: time.UnixMilli(t0 + 10*day)}, b.log)
	want := []string{"lv:{u:u1}", "hist:{u:u1}", "order:{u:u1}:e2", "orders:{u:u1}"}
	for _, scope := range []string{"{u:u1}", "{g}"} {
		for _, stat := range []string{"views", "clicks", "orders", "units", "revenue_cents"} {
			for _, bucket := range []string{"2026", "2026-03", "2026-03-01"} { // hour keys expired
				want = append(want, "st:"+scope+":"+stat+":"+bucket)
			}
		}
	}
	assertKeys(t, s, want...) // no pv, best, trend, recent, hour keys

	// A view already dead in lv (and history) is not written; nor is a histclr past its expiry.
	b = &logBuilder{t: t}
	b.view("u1", "p2", t0+95*day)
	b.view("u1", "p1", t0+hour)
	b.cleared("u1", t0+2*hour)
	s = Expected(Options{Projections: only("last_viewed", "history"), Now: time.UnixMilli(t0 + 100*day)}, b.log)
	assertKeys(t, s, "lv:{u:u1}", "hist:{u:u1}")
	assertKey(t, s, "lv:{u:u1}", zset(t0+185*day, "p2", t0+95*day))
	assertKey(t, s, "hist:{u:u1}", zset(t0+125*day, "p2@2026-06-04", t0+95*day))
}

func TestDuplicatesAppliedOnce(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u1", "p1", t0)
	b.log = append(b.log, b.log[0]) // republished
	b.add("shop.views", map[string]any{"id": "e1", "type": "view", "ts": t0 + 5, "user_id": "u1", "product_id": "p2"})
	b.view("u1", "p3", t0+1)
	s := Expected(Options{Projections: only("stats", "product_views")}, b.log)
	assertKey(t, s, "st:{u:u1}:views:2026-03-01T00", num(2, t0+hour+8*day))
	assertKey(t, s, "pv:{g}:2026-03-01", zset(t0+9*day, "p1", 1, "p3", 1))
}

func TestPoisonRecordsAreSkipped(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u1", "p1", t0)
	b.log = append(b.log, gen.Record{Topic: "shop.views", Value: []byte("{not json"), Poison: true, Reason: "not JSON"})
	s := Expected(Options{Projections: only("stats")}, b.log)
	assertKey(t, s, "st:{g}:views:2026", num(1, 0))
}

func TestDisabledProjectionsWriteNothing(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u1", "a", t0+1*hour)
	b.cleared("u1", t0+2*hour)
	b.view("u1", "b", t0+90*minute) // not ignored: no histclr without history
	b.order("u1", t0+3*hour, item{"p1", 1, 100})
	s := Expected(Options{Projections: only("last_viewed")}, b.log)
	assertKeys(t, s, "lv:{u:u1}")
	assertKey(t, s, "lv:{u:u1}", zset(t0+90*minute+90*day, "b", t0+90*minute))

	s = Expected(Options{Projections: only("stats")}, b.log)
	for k := range s {
		if !strings.HasPrefix(k, "st:") {
			t.Errorf("stats-only state has %s", k)
		}
	}
	if s := Expected(Options{}, b.log); len(s) != 0 {
		t.Errorf("nothing enabled, state:\n%s", s.Format())
	}
}

func TestKeyPrefix(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u1", "a", t0)
	b.cleared("u1", t0+1)
	b.order("u1", t0+2, item{"p1", 1, 100})
	s := Expected(Options{Projections: projections.Defaults(), KeyPrefix: "shop:"}, b.log)
	for k := range s {
		if !strings.HasPrefix(k, "shop:") {
			t.Errorf("key %s lacks the prefix", k)
		}
	}
	assertKey(t, s, "shop:histclr:{u:u1}", num(t0+1, t0+1+90*day))
	assertKey(t, s, "shop:recent:{g}", zset(t0+2+hour, "e3", t0+2))
	if _, ok := s["shop:order:{u:u1}:e3"]; !ok {
		t.Errorf("order key missing:\n%s", s.Format())
	}
}

func TestOrdersAndRecentOrders(t *testing.T) {
	b := &logBuilder{t: t}
	b.order("u1", t0, item{"p1", 2, 150}, item{"p2", 1, 99})
	b.order("u2", t0+70*minute, item{"p1", 1, 100})
	b.order("u1", t0+2*hour, item{"p3", 1, 100})
	b.order("u3", t0+30*minute, item{"p3", 1, 100}) // older than the window: not kept
	s := Expected(Options{Projections: only("recent_orders", "orders")}, b.log)
	assertKey(t, s, "recent:{g}", zset(t0+3*hour, "e2", t0+70*minute, "e3", t0+2*hour))
	assertKey(t, s, "orders:{u:u1}", zset(t0+2*hour+90*day, "e1", t0, "e3", t0+2*hour))
	assertKey(t, s, "orders:{u:u3}", zset(t0+30*minute+90*day, "e4", t0+30*minute))
	assertKey(t, s, "order:{u:u1}:e1", str(`{"id":"e1","user_id":"u1","ts":1772323200000,"items":[{"product_id":"p1","quantity":2,"price_cents":150},{"product_id":"p2","quantity":1,"price_cents":99}],"total_cents":399}`, t0+90*day))
}

func TestRankingsAndTrending(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u1", "p1", t0+minute+5*second)
	b.view("u2", "p1", t0+minute+50*second)
	b.view("u1", "p2", t0+2*minute)
	b.order("u1", t0+3*minute, item{"p1", 2, 100}, item{"p1", 3, 100}, item{"p2", 1, 5})
	s := Expected(Options{Projections: only("bestsellers", "product_views", "trending")}, b.log)
	assertKeys(t, s, "best:{g}:2026-03-01", "pv:{g}:2026-03-01", "trend:{g}:2026-03-01T00:01", "trend:{g}:2026-03-01T00:02")
	assertKey(t, s, "best:{g}:2026-03-01", zset(t0+9*day, "p1", int64(5), "p2", int64(1)))
	assertKey(t, s, "pv:{g}:2026-03-01", zset(t0+9*day, "p1", int64(2), "p2", int64(1)))
	assertKey(t, s, "trend:{g}:2026-03-01T00:01", zset(t0+2*minute+2*hour, "p1", int64(2)))
	assertKey(t, s, "trend:{g}:2026-03-01T00:02", zset(t0+3*minute+2*hour, "p2", int64(1)))
}

func TestDuplicatesOutsideWindow(t *testing.T) {
	b := &logBuilder{t: t}
	b.view("u1", "p1", t0)
	b.view("u1", "p1", t0+day+hour)
	b.log = append(b.log, b.log[0], b.log[1])
	opts := Options{Projections: projections.Defaults(), Window: 24 * time.Hour, Now: time.UnixMilli(t0 + 2*day)}
	if got := DuplicatesOutsideWindow(opts, b.log); len(got) != 1 || got[0] != "e1" {
		t.Errorf("DuplicatesOutsideWindow = %q, want [e1]", got)
	}
}

// TestGeneratedLogIsConsistent runs the model over a generated log and checks
// totals that follow from the log directly.
func TestGeneratedLogIsConsistent(t *testing.T) {
	cfg := gen.DefaultConfig()
	log := gen.New(cfg).Log(6000)
	views, units := int64(0), int64(0)
	seen := map[string]bool{}
	for _, r := range log {
		if r.Poison || seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		e, err := decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == "view" {
			views++
		}
		units += e.units()
	}
	for _, loc := range []*time.Location{time.UTC, newYork(t)} {
		opts := Options{Projections: projections.Defaults(), Location: loc}
		s := Expected(opts, log)
		sums := map[string]int64{}
		for k, v := range s {
			switch {
			case strings.HasPrefix(k, "st:{g}:views:") && len(k) == len("st:{g}:views:2026-03-01"):
				sums["views by day"] += mustInt(t, v.Str)
			case strings.HasPrefix(k, "best:"):
				for _, sc := range v.ZSet {
					sums["units"] += int64(sc)
				}
			case strings.HasPrefix(k, "lv:") && len(v.ZSet) > 10, strings.HasPrefix(k, "hist:") && len(v.ZSet) > 100:
				t.Errorf("%s has %d members", k, len(v.ZSet))
			}
		}
		if sums["views by day"] != views || sums["units"] != units {
			t.Errorf("%s: sums %v, want views %d units %d", loc, sums, views, units)
		}
		// Processing later: every key left must outlive Now.
		opts.Now = cfg.Start.Add(cfg.Span + 20*24*time.Hour)
		for k, v := range Expected(opts, log) {
			if v.ExpireAtMs != 0 && v.ExpireAtMs <= opts.Now.UnixMilli() {
				t.Errorf("%s expires at %d, before Now", k, v.ExpireAtMs)
			}
		}
	}
}

func TestExpiryBoundaryIsSkipped(t *testing.T) {
	cfg := only("stats")
	cfg.Stats.Granularities = []string{"hour"}
	b := &logBuilder{t: t}
	b.click("u1", t0+5)
	expireAt := t0 + hour + 8*day
	if s := Expected(Options{Projections: cfg, Now: time.UnixMilli(expireAt)}, b.log); len(s) != 0 {
		t.Errorf("write with EXPIREAT == Now was applied:\n%s", s.Format())
	}
	s := Expected(Options{Projections: cfg, Now: time.UnixMilli(expireAt - 1)}, b.log)
	assertKey(t, s, "st:{g}:clicks:2026-03-01T00", num(1, expireAt))
}
