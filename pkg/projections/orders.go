package projections

import (
	"encoding/json"
	"time"

	"projector/pkg/events"
)

// recentOrdersSpec declares `recent:{g}`.
var recentOrdersSpec = Spec{
	Name:     "recent_orders",
	Scope:    ScopeGlobal,
	Patterns: []string{"recent:*"},
	section:  func(c *Config) section { return &c.RecentOrders },
	defaults: func(c *Config) { c.RecentOrders = RecentOrdersConfig{Enabled: true, Keep: time.Hour} },
	build:    func(c Config, k Keys) Projection { return recentOrders{cfg: c.RecentOrders, keys: k} },
}

// ordersSpec declares `order:{u:<user>}:<id>` and `orders:{u:<user>}`.
var ordersSpec = Spec{
	Name:     "orders",
	Scope:    ScopeUser,
	Patterns: []string{"order:*", "orders:*"},
	section:  func(c *Config) section { return &c.Orders },
	defaults: func(c *Config) { c.Orders = OrdersConfig{Enabled: true, TTL: 90 * Day} },
	build:    func(c Config, k Keys) Projection { return orders{cfg: c.Orders, keys: k} },
}

// RecentOrdersConfig tunes `recent:{g}`.
type RecentOrdersConfig struct {
	Enabled bool          `mapstructure:"enabled"`
	Keep    time.Duration `mapstructure:"keep"` // window kept behind the newest order ts
}

func (c *RecentOrdersConfig) enabledFlag() *bool { return &c.Enabled }

// OrdersConfig tunes `order:{u:<user>}:<id>` and `orders:{u:<user>}`.
type OrdersConfig struct {
	Enabled bool          `mapstructure:"enabled"`
	TTL     time.Duration `mapstructure:"ttl"`
}

func (c *OrdersConfig) enabledFlag() *bool { return &c.Enabled }

// RecentOrders is `recent:{g}`.
func (k Keys) RecentOrders() string { return k.Global("recent") }

// Order is `order:{u:<user>}:<id>`.
func (k Keys) Order(user, id string) string { return k.Prefix + "order:{u:" + user + "}:" + id }

// Orders is `orders:{u:<user>}`.
func (k Keys) Orders(user string) string { return k.User("orders", user) }

// recentOrders maintains `recent:{g}`: order ids of the last Keep behind the newest order.
type recentOrders struct {
	cfg  RecentOrdersConfig
	keys Keys
}

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
