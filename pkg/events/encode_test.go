package events

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// validEvents returns one valid event of every type, and variants.
func validEvents() []Event {
	e := func(t Type) Event { return Event{ID: "e-1", Type: t, TS: 1700000000000, UserID: "u42"} }
	view := e(View)
	view.ProductID, view.Device, view.StoreID = "p1", "-", "-"
	viewFull := view
	viewFull.Device, viewFull.StoreID = "mobile", "s-7"
	click := e(Click)
	clickTarget := e(Click)
	clickTarget.TargetID = "banner"
	order := e(Order)
	order.Items = []Item{{"p1", 2, 1999}, {"p2", 10000, 0}, {"p1", 1, 100000000}}
	cleared := e(HistoryCleared)
	removed := e(HistoryItemRemoved)
	removed.ProductID = "p9"
	odd := e(HistoryCleared)
	odd.ID = `a"b\c:d~` + strings.Repeat("x", 120)
	odd.UserID = strings.Repeat("u", 64)
	odd.TS = EndTS - 1
	return []Event{view, viewFull, click, clickTarget, order, cleared, removed, odd}
}

func TestEncodeCanonical(t *testing.T) {
	evs := validEvents()
	want := []string{
		`{"id":"e-1","type":"view","ts":1700000000000,"user_id":"u42","product_id":"p1"}`,
		`{"id":"e-1","type":"view","ts":1700000000000,"user_id":"u42","product_id":"p1","device":"mobile","store_id":"s-7"}`,
		`{"id":"e-1","type":"click","ts":1700000000000,"user_id":"u42"}`,
		`{"id":"e-1","type":"click","ts":1700000000000,"user_id":"u42","target_id":"banner"}`,
		`{"id":"e-1","type":"order","ts":1700000000000,"user_id":"u42","items":[{"product_id":"p1","quantity":2,"price_cents":1999},{"product_id":"p2","quantity":10000,"price_cents":0},{"product_id":"p1","quantity":1,"price_cents":100000000}]}`,
		`{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`,
		`{"id":"e-1","type":"history_item_removed","ts":1700000000000,"user_id":"u42","product_id":"p9"}`,
	}
	for i, w := range want {
		got, err := Encode(evs[i])
		if err != nil {
			t.Fatalf("Encode(%+v): %v", evs[i], err)
		}
		if string(got) != w {
			t.Errorf("Encode(%+v)\n got %s\nwant %s", evs[i], got, w)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, ev := range validEvents() {
		if err := Validate(ev); err != nil {
			t.Fatalf("Validate(%+v): %v", ev, err)
		}
		b, err := Encode(ev)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", ev, err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)) = %s: %v", ev, b, err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Fatalf("Decode(Encode(ev)) = %+v, want %+v (JSON %s)", got, ev, b)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	valid := validEvents()
	view, click, order, removed := valid[0], valid[2], valid[4], valid[6]
	tests := []struct {
		name        string
		mod         func() Event
		field, rule string
	}{
		{"empty id", func() Event { e := view; e.ID = ""; return e }, "id", "empty"},
		{"id with space", func() Event { e := view; e.ID = "a b"; return e }, "id", "byte 0x20"},
		{"no type", func() Event { e := view; e.Type = ""; return e }, "type", "required"},
		{"unknown type", func() Event { e := view; e.Type = "foo"; return e }, "type", `unknown event type "foo"`},
		{"ts too small", func() Event { e := view; e.TS = MinTS - 1; return e }, "ts", "must be an integer"},
		{"ts too big", func() Event { e := view; e.TS = EndTS; return e }, "ts", "must be an integer"},
		{"no user", func() Event { e := view; e.UserID = ""; return e }, "user_id", "required"},
		{"user with colon", func() Event { e := view; e.UserID = "a:b"; return e }, "user_id", "byte 0x3a"},
		{"view without product", func() Event { e := view; e.ProductID = ""; return e }, "product_id", "required"},
		{"view with empty device", func() Event { e := view; e.Device = ""; return e }, "device", "required"},
		{"view with bad store", func() Event { e := view; e.StoreID = "{s}"; return e }, "store_id", "byte 0x7b"},
		{"view with target", func() Event { e := view; e.TargetID = "t"; return e }, "target_id", "must be empty for a view event"},
		{"view with empty items", func() Event { e := view; e.Items = []Item{}; return e }, "items", "must be empty"},
		{"click with product", func() Event { e := click; e.ProductID = "p"; return e }, "product_id", "must be empty for a click event"},
		{"click with bad target", func() Event { e := click; e.TargetID = "a b"; return e }, "target_id", "byte 0x20"},
		{"order without items", func() Event { e := order; e.Items = nil; return e }, "items", "got 0 items"},
		{"order with 101 items", func() Event { e := order; e.Items = make([]Item, 101); return e }, "items", "got 101 items"},
		{"order item quantity", func() Event {
			e := order
			e.Items = []Item{{"p", 1, 1}, {"p", 0, 1}}
			return e
		}, "items[1].quantity", "1..10000"},
		{"order item price", func() Event { e := order; e.Items = []Item{{"p", 1, -1}}; return e }, "items[0].price_cents", "0..100000000"},
		{"order item product", func() Event { e := order; e.Items = []Item{{"", 1, 1}}; return e }, "items[0].product_id", "empty"},
		{"order with device", func() Event { e := order; e.Device = "-"; return e }, "device", "must be empty for a order event"},
		{"removed without product", func() Event { e := removed; e.ProductID = ""; return e }, "product_id", "required"},
		{"removed with store", func() Event { e := removed; e.StoreID = "s"; return e }, "store_id", "must be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.mod()
			err := Validate(ev)
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field != tc.field || !strings.Contains(ve.Rule, tc.rule) {
				t.Fatalf("Validate(%+v) = %v, want field %q rule containing %q", ev, err, tc.field, tc.rule)
			}
			b, err := Encode(ev)
			if !errors.As(err, &ve) || ve.Field != tc.field || b != nil {
				t.Fatalf("Encode(%+v) = %s, %v; want no bytes and the validation error", ev, b, err)
			}
		})
	}
}

// TestDecodeEncodeAgree checks that every valid record of the decode table
// re-encodes to a record that decodes to the same event.
func TestDecodeEncodeAgree(t *testing.T) {
	for _, in := range validSeeds() {
		ev, err := Decode([]byte(in))
		if err != nil {
			t.Fatalf("Decode(%.200s): %v", in, err)
		}
		b, err := Encode(ev)
		if err != nil {
			t.Fatalf("Encode(Decode(%.200s)): %v", in, err)
		}
		again, err := Decode(b)
		if err != nil || !reflect.DeepEqual(again, ev) {
			t.Fatalf("Decode(Encode(ev)) = %+v, %v; want %+v", again, err, ev)
		}
	}
}
