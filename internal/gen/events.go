package gen

import (
	"encoding/json"
	"fmt"
)

// wireEvent is the JSON form of a valid event, fields in the order producers
// usually write them. Optional fields are omitted when empty.
type wireEvent struct {
	ID        string     `json:"id"`
	Type      string     `json:"type"`
	TS        int64      `json:"ts"`
	UserID    string     `json:"user_id"`
	ProductID string     `json:"product_id,omitempty"`
	Device    string     `json:"device,omitempty"`
	StoreID   string     `json:"store_id,omitempty"`
	TargetID  string     `json:"target_id,omitempty"`
	Items     []wireItem `json:"items,omitempty"`
}

// wireItem is one order line.
type wireItem struct {
	ProductID  string `json:"product_id"`
	Quantity   int64  `json:"quantity"`
	PriceCents int64  `json:"price_cents"`
}

// fresh builds a new valid event record and returns it with its ts.
func (g *Generator) fresh(lo, width int64, snap bool) (Record, int64) {
	user := g.pickUser()
	ev := wireEvent{ID: g.nextID(), UserID: user}
	ev.TS = g.eventTS(user, lo, width, snap)
	topic := g.cfg.ViewsTopic
	h := g.cfg.HistoryEventRate
	switch r := g.rng.Float64(); {
	case r < h:
		ev.Type = "history_cleared"
	case r < 2*h:
		ev.Type = "history_item_removed"
		ev.ProductID = g.viewedProduct(user)
	case r < 2*h+orderRate:
		ev.Type = "order"
		ev.Items = g.items()
		topic = g.cfg.OrdersTopic
	case r < 2*h+orderRate+clickRate:
		ev.Type = "click"
		ev.TargetID = g.clickTarget()
		topic = g.cfg.ClicksTopic
	default:
		ev.Type = "view"
		g.fillView(&ev)
	}
	return Record{Topic: topic, Key: []byte(user), Value: g.encode(ev), ID: ev.ID}, ev.TS
}

// fillView sets the product, device and store of a view and remembers the view.
func (g *Generator) fillView(ev *wireEvent) {
	seen := g.viewed[ev.UserID]
	if len(seen) > 0 && g.rng.Float64() < repeatViewRate {
		ev.ProductID = seen[g.rng.IntN(len(seen))]
	} else {
		ev.ProductID = g.pickProduct()
	}
	if g.rng.Float64() < 0.6 {
		d := devices()
		ev.Device = d[g.rng.IntN(len(d))]
	}
	if g.rng.Float64() < 0.5 {
		s := stores()
		ev.StoreID = s[g.rng.IntN(len(s))]
	}
	seen = append(seen, ev.ProductID)
	if len(seen) > recentViewsKept {
		seen = seen[1:]
	}
	g.viewed[ev.UserID] = seen
}

// viewedProduct returns a product the user viewed recently (or any product).
func (g *Generator) viewedProduct(user string) string {
	if seen := g.viewed[user]; len(seen) > 0 {
		return seen[g.rng.IntN(len(seen))]
	}
	return g.pickProduct()
}

// clickTarget returns an optional click target ("" for none).
func (g *Generator) clickTarget() string {
	switch r := g.rng.Float64(); {
	case r < 0.3:
		return g.pickProduct()
	case r < 0.6:
		return fmt.Sprintf("banner-%d", g.rng.IntN(12))
	default:
		return ""
	}
}

// items returns 1..5 order lines with quantities 1..5 and prices 99..99999
// cents (occasionally 0). A product may appear on two lines.
func (g *Generator) items() []wireItem {
	items := make([]wireItem, 1+g.rng.IntN(5))
	for i := range items {
		price := 99 + g.rng.Int64N(99999-99+1)
		if g.rng.Float64() < zeroPriceRate {
			price = 0
		}
		items[i] = wireItem{ProductID: g.pickProduct(), Quantity: 1 + g.rng.Int64N(5), PriceCents: price}
	}
	return items
}

// encode returns the JSON of a valid event: usually in struct order, sometimes
// with sorted keys, an unknown extra field or indentation (all valid).
func (g *Generator) encode(ev wireEvent) []byte {
	var v any = ev
	sorted := g.rng.Float64() < mapEncodingRate
	extra := g.rng.Float64() < extraFieldRate
	if sorted || extra {
		m := eventMap(ev)
		switch {
		case !extra:
		case g.rng.IntN(2) == 0:
			m["client"] = map[string]any{"app": "shop", "build": g.rng.IntN(1000), "flags": []any{true, nil, 1.5, "x"}}
		default:
			m["note"] = "unknown fields are ignored"
		}
		v = m
	}
	var (
		b   []byte
		err error
	)
	if g.rng.Float64() < indentRate {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		panic(fmt.Sprintf("gen: encode event %s: %v", ev.ID, err)) // plain data: cannot fail
	}
	return b
}

// eventMap returns ev as a map (encoded with sorted keys).
func eventMap(ev wireEvent) map[string]any {
	m := map[string]any{"id": ev.ID, "type": ev.Type, "ts": ev.TS, "user_id": ev.UserID}
	for k, v := range map[string]string{"product_id": ev.ProductID, "device": ev.Device, "store_id": ev.StoreID, "target_id": ev.TargetID} {
		if v != "" {
			m[k] = v
		}
	}
	if len(ev.Items) > 0 {
		m["items"] = ev.Items
	}
	return m
}
