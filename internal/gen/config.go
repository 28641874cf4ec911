package gen

import "time"

// Config tunes a Generator. DefaultConfig returns sensible values; every rate
// is a probability per emitted record in [0, 1].
type Config struct {
	// Seed makes the output deterministic: the same Config gives the same records.
	Seed uint64
	// Users and Products are the population sizes (user ids u1.., product ids p1..,
	// plus a few ids with unusual but valid characters).
	Users    int
	Products int
	// Start and Span bound the event times of Log: ts lies in [Start, Start+Span],
	// except out-of-order events, which may lie up to a few hours before Start.
	Start time.Time
	Span  time.Duration
	// ViewsTopic carries views and the history events; ClicksTopic clicks;
	// OrdersTopic orders.
	ViewsTopic, ClicksTopic, OrdersTopic string
	// DupRate is the share of records that re-publish an earlier valid record
	// of the same topic (same key and value).
	DupRate float64
	// PoisonRate is the share of records that are poison (docs/contract.md section 2).
	PoisonRate float64
	// OutOfOrderRate is the share of events whose ts goes back in time (up to
	// three hours before the user's newest ts so far).
	OutOfOrderRate float64
	// HistoryEventRate is the share of history_cleared events, and also the
	// share of history_item_removed events.
	HistoryEventRate float64
	// MoveDupRate is the share of the duplicates of clicks and orders that
	// are published in another partition than their first copy
	// (Record.OtherPartition): a relay that re-keys, or a producer retrying
	// through another path.
	MoveDupRate float64
	// BackfillRate is the share of fresh events whose ts lies 9 to 40 days
	// before their place in the log (a backfill of old data); the user's
	// newest ts stays.
	BackfillRate float64
	// UUIDs makes event ids 36-character UUIDs (version 4 layout, derived
	// from Seed and the record's sequence number) instead of ev-<seed>-<n>:
	// what most producers send.
	UUIDs bool
}

// DefaultConfig returns 200 users, 500 products, 2% duplicates, 1% poison,
// 5% out-of-order events, 1% history_cleared and 1% history_item_removed,
// and a 28-day span from 2026-02-20T00:00Z that crosses a month boundary and
// the 2026-03-08 daylight-saving change of America/New_York.
func DefaultConfig() Config {
	return Config{
		Seed:             1,
		Users:            200,
		Products:         500,
		Start:            time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC),
		Span:             28 * 24 * time.Hour,
		ViewsTopic:       "shop.views",
		ClicksTopic:      "shop.clicks",
		OrdersTopic:      "shop.orders",
		DupRate:          0.02,
		PoisonRate:       0.01,
		OutOfOrderRate:   0.05,
		HistoryEventRate: 0.01,
	}
}

// withDefaults fills zero fields that would make generation impossible.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Users < 1 {
		c.Users = d.Users
	}
	if c.Products < 2 {
		c.Products = d.Products
	}
	if c.Start.IsZero() {
		c.Start = d.Start
	}
	if c.Span <= 0 {
		c.Span = d.Span
	}
	if c.ViewsTopic == "" {
		c.ViewsTopic = d.ViewsTopic
	}
	if c.ClicksTopic == "" {
		c.ClicksTopic = d.ClicksTopic
	}
	if c.OrdersTopic == "" {
		c.OrdersTopic = d.OrdersTopic
	}
	return c
}
