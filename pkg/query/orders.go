package query

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// OrderRef is an order id with its ts.
type OrderRef struct {
	ID string `json:"id"`
	TS int64  `json:"ts"`
}

// RecentOrders is the answer for the orders of the last minutes.
type RecentOrders struct {
	Minutes int `json:"minutes"`
	// Count is the number of orders with ts in (now - minutes, +inf).
	Count int64 `json:"count"`
	// Orders are the newest of them (at most the limit asked for), newest first.
	Orders []OrderRef `json:"orders"`
}

// RecentOrders counts the orders of the last minutes (1 up to
// projections.recent_orders.keep) and lists the newest limit (0..100) of them.
func (r *Reader) RecentOrders(ctx context.Context, minutes, limit int) (RecentOrders, error) {
	c := r.cfg.RecentOrders
	if !c.Enabled {
		return RecentOrders{}, disabled("recent_orders")
	}
	maxMin := int(c.Keep / time.Minute)
	if minutes < 1 || minutes > maxMin {
		return RecentOrders{}, badInput("minutes", "must be in 1..%d, the window recent_orders keeps (got %d)", maxMin, minutes)
	}
	if limit < 0 || limit > MaxPageSize {
		return RecentOrders{}, badInput("limit", "must be in 0..%d (got %d)", MaxPageSize, limit)
	}
	count, zs, err := r.window(ctx, r.keys.RecentOrders(), r.aliveFrom(time.Duration(minutes)*time.Minute), 0, int64(limit))
	if err != nil {
		return RecentOrders{}, err
	}
	return RecentOrders{Minutes: minutes, Count: count, Orders: refs(zs)}, nil
}

// refs converts sorted-set entries to OrderRefs.
func refs(zs []redis.Z) []OrderRef {
	out := make([]OrderRef, 0, len(zs))
	for _, z := range zs {
		out = append(out, OrderRef{ID: z.Member.(string), TS: int64(z.Score)})
	}
	return out
}

// OrderItem is one line of an order document.
type OrderItem struct {
	ProductID  string `json:"product_id"`
	Quantity   int64  `json:"quantity"`
	PriceCents int64  `json:"price_cents"`
}

// Order is the document `order:{u:<user>}:<id>` (docs/contract.md section 4).
type Order struct {
	ID         string      `json:"id"`
	UserID     string      `json:"user_id"`
	TS         int64       `json:"ts"`
	Items      []OrderItem `json:"items"`
	TotalCents int64       `json:"total_cents"`
}

// CustomerOrders is one page of a customer's orders, newest first.
type CustomerOrders struct {
	Orders []Order `json:"orders"`
	Page   int     `json:"page"`
	Size   int     `json:"size"`
	// Total counts the customer's live orders.
	Total int64 `json:"total"`
}

// CustomerOrders returns page page (from 1) of the user's orders with their
// documents. Index entries whose ts + projections.orders.ttl <= now are dead
// (their documents have expired) and neither listed nor counted; an index
// entry whose document is missing is left out.
func (r *Reader) CustomerOrders(ctx context.Context, user string, page, size int) (CustomerOrders, error) {
	c := r.cfg.Orders
	if !c.Enabled {
		return CustomerOrders{}, disabled("orders")
	}
	if err := checkPage(page, size); err != nil {
		return CustomerOrders{}, err
	}
	total, zs, err := r.window(ctx, r.keys.Orders(user), r.aliveFrom(c.TTL), int64((page-1)*size), int64(size))
	if err != nil {
		return CustomerOrders{}, err
	}
	out := CustomerOrders{Orders: []Order{}, Page: page, Size: size, Total: total}
	if len(zs) == 0 {
		return out, nil
	}
	ids := refs(zs)
	docKeys := make([]string, len(ids))
	for i, o := range ids {
		docKeys[i] = r.keys.Order(user, o.ID)
	}
	var docs []any
	err = r.read(ctx, docKeys[0], func(c redis.Cmdable, _ bool) error {
		docs, err = c.MGet(ctx, docKeys...).Result()
		return err
	})
	if err != nil {
		return CustomerOrders{}, fmt.Errorf("read order documents of %s: %w", user, err)
	}
	for i, d := range docs {
		s, ok := d.(string)
		if !ok {
			continue // expired between the two reads
		}
		var o Order
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			return CustomerOrders{}, fmt.Errorf("decode %s: %w", docKeys[i], err)
		}
		out.Orders = append(out.Orders, o)
	}
	return out, nil
}
