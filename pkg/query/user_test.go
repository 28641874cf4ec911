package query

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestLastViewedIgnoresDeadEntries(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	ttl := f.r.cfg.LastViewed.TTL
	f.zadd(t, f.keys.LastViewed("u1"),
		"p-new", ms(time.Minute), "p-tie-a", ms(time.Hour), "p-tie-b", ms(time.Hour),
		"p-edge-alive", ms(ttl-time.Millisecond), "p-edge-dead", ms(ttl), "p-old", ms(ttl+time.Hour))
	got := must(f.r.LastViewed(ctx, "u1"))
	equal(t, "last viewed", got, []Viewed{
		{"p-new", ms(time.Minute)}, {"p-tie-b", ms(time.Hour)}, {"p-tie-a", ms(time.Hour)},
		{"p-edge-alive", ms(ttl - time.Millisecond)},
	})
	equal(t, "unknown user", must(f.r.LastViewed(ctx, "nobody")), []Viewed{})
}

func TestLastViewedCapsAtSize(t *testing.T) {
	f := newFixture(t, time.UTC)
	var pairs []any
	for i := range 15 {
		pairs = append(pairs, fmt.Sprintf("p%02d", i), ms(time.Duration(i)*time.Minute))
	}
	f.zadd(t, f.keys.LastViewed("u1"), pairs...)
	got := must(f.r.LastViewed(context.Background(), "u1"))
	if len(got) != 10 || got[0].ProductID != "p00" || got[9].ProductID != "p09" {
		t.Fatalf("want the newest 10 (p00..p09), got %+v", got)
	}
}

func TestHistoryPages(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	ret := f.r.cfg.History.Retention
	key := f.keys.History("u1", "", "", false)
	// 23 live entries (three with the same ts), 2 dead ones.
	var pairs []any
	for i := range 20 {
		pairs = append(pairs, fmt.Sprintf("p%02d@2026-12-%02d", i, 2-i/10), ms(time.Duration(i)*time.Hour))
	}
	pairs = append(pairs, "tie-a@2026-11-30", ms(50*time.Hour), "tie-b@2026-11-30", ms(50*time.Hour), "tie-c@2026-11-30", ms(50*time.Hour))
	pairs = append(pairs, "dead@2026-11-01", ms(ret), "older@2026-10-01", ms(ret+time.Hour))
	f.zadd(t, key, pairs...)
	var all []HistoryItem
	for page := 1; page <= 3; page++ {
		p := must(f.r.History(ctx, "u1", Scope{}, page, 10))
		if p.Total != 23 || p.Page != page || p.Size != 10 {
			t.Fatalf("page %d: total %d page %d size %d, want 23, %d, 10", page, p.Total, p.Page, p.Size, page)
		}
		all = append(all, p.Items...)
	}
	if len(all) != 23 {
		t.Fatalf("got %d items over 3 pages, want 23", len(all))
	}
	equal(t, "first item", all[0], HistoryItem{"p00", "2026-12-02", ms(0)})
	equal(t, "tie order (member descending)", []string{all[20].ProductID, all[21].ProductID, all[22].ProductID},
		[]string{"tie-c", "tie-b", "tie-a"})
	p4 := must(f.r.History(ctx, "u1", Scope{}, 4, 10))
	if len(p4.Items) != 0 || p4.Total != 23 {
		t.Fatalf("page 4: %+v", p4)
	}
}

func TestHistoryValidation(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	for _, c := range []struct {
		page, size int
		scope      Scope
		param      string
	}{{1, 0, Scope{}, "size"}, {1, 101, Scope{}, "size"}, {0, 10, Scope{}, "page"}, {1, 10, Scope{"phone", "s1"}, "device"}} {
		_, err := f.r.History(ctx, "u1", c.scope, c.page, c.size)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Param != c.param {
			t.Errorf("History(page %d, size %d, %v): got %v, want an InputError about %s", c.page, c.size, c.scope, err, c.param)
		}
	}
	f.r.cfg.History.Scope = []string{"device", "store"}
	if _, err := f.r.History(ctx, "u1", Scope{}, 1, 10); err == nil {
		t.Fatal("scoped history without a scope: want an error")
	}
	f.zadd(t, f.keys.History("u1", "phone", "s1", true), "p1@2026-12-02", ms(time.Minute))
	p := must(f.r.History(ctx, "u1", Scope{"phone", "s1"}, 1, 10))
	equal(t, "scoped history", p.Items, []HistoryItem{{"p1", "2026-12-02", ms(time.Minute)}})
	f.r.cfg.History.Enabled = false
	if _, err := f.r.History(ctx, "u1", Scope{}, 1, 10); !errors.Is(err, ErrDisabled) {
		t.Fatalf("history switched off: got %v, want ErrDisabled", err)
	}
}
