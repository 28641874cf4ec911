package query

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRecentOrders(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	f.zadd(t, f.keys.RecentOrders(), "o1", ms(30*time.Second), "o2", ms(4*time.Minute), "o3", ms(5*time.Minute),
		"o4", ms(59*time.Minute), "o5", ms(time.Hour), "o2b", ms(4*time.Minute))
	r := must(f.r.RecentOrders(ctx, 5, 10))
	equal(t, "last 5 minutes", r, RecentOrders{Minutes: 5, Count: 3,
		Orders: []OrderRef{{"o1", ms(30 * time.Second)}, {"o2b", ms(4 * time.Minute)}, {"o2", ms(4 * time.Minute)}}})
	r = must(f.r.RecentOrders(ctx, 60, 2))
	if r.Count != 5 || len(r.Orders) != 2 {
		t.Fatalf("last hour: %+v (o5 is dead, exactly one hour old)", r)
	}
	for _, bad := range [][2]int{{0, 10}, {61, 10}, {5, -1}, {5, 101}} {
		var ie *InputError
		if _, err := f.r.RecentOrders(ctx, bad[0], bad[1]); !errors.As(err, &ie) {
			t.Errorf("RecentOrders(%d, %d): got %v, want an InputError", bad[0], bad[1], err)
		}
	}
}

func TestCustomerOrdersWithDocuments(t *testing.T) {
	f := newFixture(t, time.UTC)
	ctx := context.Background()
	ttl := f.r.cfg.Orders.TTL
	doc := func(id string, ts int64, qty int) string {
		return fmt.Sprintf(`{"id":%q,"user_id":"u1","ts":%d,"items":[{"product_id":"p1","quantity":%d,"price_cents":250}],"total_cents":%d}`, id, ts, qty, qty*250)
	}
	for i := range 5 {
		id, ts := fmt.Sprintf("o%d", i), ms(time.Duration(i)*time.Hour)
		f.rdb.Set(ctx, f.keys.Order("u1", id), doc(id, ts, i+1), 0)
		f.zadd(t, f.keys.Orders("u1"), id, ts)
	}
	f.zadd(t, f.keys.Orders("u1"), "gone", ms(5*time.Hour), "dead", ms(ttl)) // no document; too old
	p1 := must(f.r.CustomerOrders(ctx, "u1", 1, 2))
	if p1.Total != 6 || len(p1.Orders) != 2 {
		t.Fatalf("page 1: %+v", p1)
	}
	equal(t, "first order", p1.Orders[0], Order{ID: "o0", UserID: "u1", TS: ms(0),
		Items: []OrderItem{{ProductID: "p1", Quantity: 1, PriceCents: 250}}, TotalCents: 250})
	p3 := must(f.r.CustomerOrders(ctx, "u1", 3, 2))
	if len(p3.Orders) != 1 || p3.Orders[0].ID != "o4" {
		t.Fatalf("page 3 (o4, then the index entry without a document): %+v", p3)
	}
	none := must(f.r.CustomerOrders(ctx, "nobody", 1, 10))
	if none.Total != 0 || none.Orders == nil || len(none.Orders) != 0 {
		t.Fatalf("unknown customer: %+v", none)
	}
}
