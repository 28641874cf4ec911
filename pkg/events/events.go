// Package events defines the shop events projector consumes (docs/contract.md section 2)
// and decodes and validates their JSON form. It uses the standard library only.
package events

import "time"

// Type names the kind of an event.
type Type string

// The event types of docs/contract.md section 2.
const (
	View               Type = "view"
	Click              Type = "click"
	Order              Type = "order"
	HistoryCleared     Type = "history_cleared"
	HistoryItemRemoved Type = "history_item_removed"
)

// Types lists every known event type, in a stable order (for metrics labels).
var Types = []Type{View, Click, Order, HistoryCleared, HistoryItemRemoved}

// Item is one line of an order.
type Item struct {
	ProductID  string `json:"product_id"`
	Quantity   int64  `json:"quantity"`
	PriceCents int64  `json:"price_cents"`
}

// Event is one validated shop event. Fields that do not belong to its Type are empty.
type Event struct {
	// ID is the idempotency key: events with the same ID are one event.
	ID string
	// Type is the event type.
	Type Type
	// TS is the event time in Unix milliseconds.
	TS int64
	// UserID is the user the event belongs to (also the Kafka record key).
	UserID string
	// ProductID is set for view and history_item_removed events.
	ProductID string
	// Device and StoreID are set for view events; "-" when absent in the record.
	Device  string
	StoreID string
	// TargetID is the optional click target ("" when absent).
	TargetID string
	// Items are the order lines of an order event.
	Items []Item
}

// Time returns the event time.
func (e Event) Time() time.Time { return time.UnixMilli(e.TS) }

// Units returns the sum of quantities of an order (0 for other types).
func (e Event) Units() int64 {
	var n int64
	for _, it := range e.Items {
		n += it.Quantity
	}
	return n
}

// RevenueCents returns the sum of quantity*price_cents of an order (0 for other types).
func (e Event) RevenueCents() int64 {
	var n int64
	for _, it := range e.Items {
		n += it.Quantity * it.PriceCents
	}
	return n
}
