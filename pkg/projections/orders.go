package projections

import (
	"encoding/json"

	"projector/pkg/events"
)

// recentOrders maintains `recent:{g}`: order ids of the last Keep behind the newest order.
type recentOrders struct {
	cfg  RecentOrdersConfig
	keys Keys
}

func (recentOrders) Name() string { return "recent_orders" }

func (p recentOrders) Plan(in *Input, out []Write) []Write {
	ev := &in.Event
	keep := ms(p.cfg.Keep)
	if ev.Type != events.Order || !in.alive(ev.TS+keep) {
		return out
	}
	return append(out, Write{Kind: ZAddMax, Global: true, Key: p.keys.RecentOrders(), Member: ev.ID, Score: ev.TS,
		ExpireAt: ev.TS + keep, Trim: Trim{RetentionMs: keep}})
}

// orders maintains `order:{u:<user>}:<id>` documents and the `orders:{u:<user>}` index.
type orders struct {
	cfg  OrdersConfig
	keys Keys
}

func (orders) Name() string { return "orders" }

// OrderDoc is the JSON document stored at `order:{u:<user>}:<id>`.
type OrderDoc struct {
	ID         string        `json:"id"`
	UserID     string        `json:"user_id"`
	TS         int64         `json:"ts"`
	Items      []events.Item `json:"items"`
	TotalCents int64         `json:"total_cents"`
}

func (p orders) Plan(in *Input, out []Write) []Write {
	ev := &in.Event
	ttl := ms(p.cfg.TTL)
	if ev.Type != events.Order || !in.alive(ev.TS+ttl) {
		return out
	}
	doc, err := json.Marshal(OrderDoc{ID: ev.ID, UserID: ev.UserID, TS: ev.TS, Items: ev.Items, TotalCents: ev.RevenueCents()})
	if err != nil { // cannot happen for strings and integers
		panic("projections: marshal order: " + err.Error())
	}
	return append(out,
		Write{Kind: SetValue, Key: p.keys.Order(ev.UserID, ev.ID), Value: string(doc), ExpireAt: ev.TS + ttl},
		Write{Kind: ZAddMax, Key: p.keys.Orders(ev.UserID), Member: ev.ID, Score: ev.TS, ExpireAt: ev.TS + ttl,
			Trim: Trim{RetentionMs: ttl}})
}
