package refmodel

import (
	"encoding/json"
	"fmt"

	"projector/internal/gen"
)

// event is the model's own view of a valid event (docs/contract.md section 2). The model
// trusts the generator's Poison flag and does not validate.
type event struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	TS        int64  `json:"ts"`
	UserID    string `json:"user_id"`
	ProductID string `json:"product_id"`
	Device    string `json:"device"`
	StoreID   string `json:"store_id"`
	Items     []item `json:"items"`
}

// item is one order line.
type item struct {
	ProductID  string `json:"product_id"`
	Quantity   int64  `json:"quantity"`
	PriceCents int64  `json:"price_cents"`
}

// decode parses a record the generator marked valid.
func decode(r gen.Record) (event, error) {
	var e event
	if err := json.Unmarshal(r.Value, &e); err != nil {
		return e, fmt.Errorf("decode record %q on %s: %w", r.ID, r.Topic, err)
	}
	if e.Device == "" {
		e.Device = "-"
	}
	if e.StoreID == "" {
		e.StoreID = "-"
	}
	return e, nil
}

// orderJSON is the value of `order:{u:<user>}:<id>`: exactly these fields in
// this order, as encoding/json writes them.
type orderJSON struct {
	ID         string `json:"id"`
	UserID     string `json:"user_id"`
	TS         int64  `json:"ts"`
	Items      []item `json:"items"`
	TotalCents int64  `json:"total_cents"`
}

// units returns the sum of quantities of an order.
func (e event) units() int64 {
	var n int64
	for _, it := range e.Items {
		n += it.Quantity
	}
	return n
}

// revenue returns the sum of quantity*price_cents of an order.
func (e event) revenue() int64 {
	var n int64
	for _, it := range e.Items {
		n += it.Quantity * it.PriceCents
	}
	return n
}
