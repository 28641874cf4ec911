package events

import (
	"errors"
	"projector/internal/testing/corpus"
	"reflect"
	"strings"
	"testing"
)

// base returns the Event corpus.Rec(typ, ...) decodes to, before type fields.
func base(typ Type) Event {
	return Event{ID: "e-1", Type: typ, TS: 1700000000000, UserID: "u42"}
}

func TestDecodeValid(t *testing.T) {
	view := func(pid, device, store string) Event {
		ev := base(View)
		ev.ProductID, ev.Device, ev.StoreID = pid, device, store
		return ev
	}
	click := func(target string) Event {
		ev := base(Click)
		ev.TargetID = target
		return ev
	}
	order := func(items ...Item) Event {
		ev := base(Order)
		ev.Items = items
		return ev
	}
	removed := base(HistoryItemRemoved)
	removed.ProductID = "p9"
	hundred := make([]Item, 100)
	for i := range hundred {
		hundred[i] = Item{ProductID: "p", Quantity: 1, PriceCents: 5}
	}
	id128 := strings.Repeat("i", 128)
	user64 := strings.Repeat("u", 64)

	tests := []struct {
		name string
		in   string
		want Event
	}{
		{"view defaults", corpus.Rec("view", `"product_id":"p1"`), view("p1", "-", "-")},
		{"view all fields", corpus.Rec("view", `"product_id":"p1","device":"mobile","store_id":"s-7"`), view("p1", "mobile", "s-7")},
		{"view null optionals", corpus.Rec("view", `"product_id":"p1","device":null,"store_id":null`), view("p1", "-", "-")},
		{"view explicit dash", corpus.Rec("view", `"product_id":"p1","device":"-","store_id":"-"`), view("p1", "-", "-")},
		{"view ignores fields of other types", corpus.Rec("view", `"product_id":"p1","target_id":"t","items":[{"x":1}]`), view("p1", "-", "-")},
		{"view ignores wrong-typed fields of other types", corpus.Rec("view", `"product_id":"p1","items":"no","target_id":7`), view("p1", "-", "-")},
		{"view ignores unknown fields", corpus.Rec("view", `"product_id":"p1","ID":5,"extra":{"a":[1,2,{"b":null}],"c":1e400,"d":-0.5E-7},"u\u00e9":"\ud83d\ude00"`), view("p1", "-", "-")},
		{"view whitespace everywhere", " \t\r\n{ \"id\" : \"e-1\" , \"type\":\"view\",\n\"ts\" : 1700000000000 ,\"user_id\":\"u42\",\"product_id\":\"p1\" }\n ", view("p1", "-", "-")},
		{"fields in any order", `{"product_id":"p1","ts":1700000000000,"user_id":"u42","type":"view","id":"e-1"}`, view("p1", "-", "-")},
		{"click without target", corpus.Rec("click", ""), click("")},
		{"click with target", corpus.Rec("click", `"target_id":"banner-3"`), click("banner-3")},
		{"click null target", corpus.Rec("click", `"target_id":null`), click("")},
		{"order one item", corpus.Rec("order", `"items":[{"product_id":"p1","quantity":2,"price_cents":1999}]`), order(Item{"p1", 2, 1999})},
		{"order limits", corpus.Rec("order", `"items":[{"price_cents":0,"quantity":1,"product_id":"a"},{"product_id":"b","quantity":10000,"price_cents":100000000,"note":"x"}]`),
			order(Item{"a", 1, 0}, Item{"b", 10000, 100000000})},
		{"order 100 items", corpus.Rec("order", corpus.ItemsJSON(100)), order(hundred...)},
		{"order ignores view fields", corpus.Rec("order", `"product_id":"x y","device":7,`+corpus.ItemsJSON(1)), order(Item{"p", 1, 5})},
		{"history_cleared", corpus.Rec("history_cleared", ""), base(HistoryCleared)},
		{"history_cleared ignores product_id", corpus.Rec("history_cleared", `"product_id":"p1"`), base(HistoryCleared)},
		{"history_item_removed", corpus.Rec("history_item_removed", `"product_id":"p9"`), removed},
		{"ts min", `{"id":"e-1","type":"history_cleared","ts":946684800000,"user_id":"u42"}`,
			Event{ID: "e-1", Type: HistoryCleared, TS: MinTS, UserID: "u42"}},
		{"ts max", `{"id":"e-1","type":"history_cleared","ts":4102444799999,"user_id":"u42"}`,
			Event{ID: "e-1", Type: HistoryCleared, TS: EndTS - 1, UserID: "u42"}},
		{"id 128 bytes, user_id 64 bytes", `{"id":"` + id128 + `","type":"history_cleared","ts":1700000000000,"user_id":"` + user64 + `"}`,
			Event{ID: id128, Type: HistoryCleared, TS: 1700000000000, UserID: user64}},
		{"id may hold colon, quote, backslash", `{"id":"a:b\"c\\d~!","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`,
			Event{ID: `a:b"c\d~!`, Type: HistoryCleared, TS: 1700000000000, UserID: "u42"}},
		{"escaped ASCII in strings and keys", `{"\u0069d":"\u0041\/B","type":"hist\u006fry_cleared","ts":1700000000000,"user_id":"u42"}`,
			Event{ID: "A/B", Type: HistoryCleared, TS: 1700000000000, UserID: "u42"}},
		{"unknown field nested to the depth limit", corpus.Rec("history_cleared", `"deep":`+corpus.Nest(MaxDepth-1, "1")), base(HistoryCleared)},
		{"items nested to the depth limit", corpus.Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5,"x":`+corpus.Nest(MaxDepth-3, "")+`}]`),
			order(Item{"p", 1, 5})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in))
			if err != nil {
				t.Fatalf("Decode(%s): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Decode(%s)\n got %+v\nwant %+v", tc.in, got, tc.want)
			}
			if err := Validate(got); err != nil {
				t.Fatalf("Validate(Decode(%s)): %v", tc.in, err)
			}
		})
	}
}

// poisonCases are records that break one rule each (internal/testing/corpus).
var poisonCases = corpus.Cases()

func TestDecodePoison(t *testing.T) {
	for _, tc := range poisonCases {
		t.Run(tc.Name, func(t *testing.T) {
			ev, err := Decode([]byte(tc.In))
			if err == nil {
				t.Fatalf("Decode(%.200q) = %+v, want an error", tc.In, ev)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Decode(%.200q) error %T %v, want *ValidationError", tc.In, err, err)
			}
			if _, ok := err.(*ValidationError); !ok {
				t.Fatalf("Decode error is %T, want *ValidationError itself", err)
			}
			if ve.Field != tc.Field || !strings.Contains(ve.Rule, tc.Rule) {
				t.Fatalf("Decode(%.200q) = field %q rule %q, want field %q rule containing %q", tc.In, ve.Field, ve.Rule, tc.Field, tc.Rule)
			}
			if !reflect.DeepEqual(ev, Event{}) {
				t.Fatalf("Decode returned %+v with the error, want the zero Event", ev)
			}
			checkOneLine(t, err)
		})
	}
}

// checkOneLine fails unless err.Error() is one printable ASCII line of
// bounded length.
func checkOneLine(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" || len(msg) > 1024 {
		t.Fatalf("Error() has %d bytes: %.300q", len(msg), msg)
	}
	for i := 0; i < len(msg); i++ {
		if msg[i] < 0x20 || msg[i] > 0x7e {
			t.Fatalf("Error() has byte %#x at %d: %q", msg[i], i, msg)
		}
	}
}

func TestDecodeErrorText(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"id":"e-1","type":"history_cleared","ts":"5","user_id":"u42"}`,
			`field "ts": must be an integer of Unix milliseconds in [946684800000, 4102444800000); got string "5"`},
		{corpus.Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5},{"product_id":"p","quantity":1,"price_cents":5},{"product_id":"p","quantity":0,"price_cents":5}]`),
			`field "items[2].quantity": must be an integer in 1..10000; got 0`},
		{"\xff", `record: not valid UTF-8`},
		{`{"id":`, `record: not valid JSON: unexpected end of input`},
		{`{"id" 1}`, `record: not valid JSON: unexpected '1' at offset 6`},
		{corpus.Rec("foo", ""), `field "type": unknown event type "foo" (want view, click, order, history_cleared or history_item_removed)`},
		{`{"id":"a b\u0000","type":"view"}`,
			`field "id": must be a string of 1..128 printable ASCII bytes (0x21..0x7E) without '{' or '}'; got "a b\x00" (byte 0x20 at index 1)`},
	}
	for _, tc := range tests {
		_, err := Decode([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Decode(%q) error\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

func TestDecodeErrorBounded(t *testing.T) {
	long := strings.Repeat("\u00e9", 5000)
	key := strings.Repeat(`k\n`, 5000)
	for _, in := range []string{
		corpus.Rec(long, ""),
		`{"id":"` + long + `"}`,
		`{"id":"` + strings.Repeat("a", 5000) + `\n"}`,
		`{"id":1` + strings.Repeat("0", 5000) + `}`,
		corpus.Rec("history_cleared", `"`+strings.Repeat("\\u0000", 2000)+`":1,"`+strings.Repeat("\\u0000", 2000)+`":2`),
		`{"` + strings.Repeat("x", 3000) + `":` + strings.Repeat(`{"`+strings.Repeat("y", 3000)+`":`, 14) + `{"` + key + `":1,"` + key + `":1}` + strings.Repeat("}", 15),
	} {
		_, err := Decode([]byte(in))
		if err == nil {
			t.Fatalf("Decode(%.100q...) succeeded", in)
		}
		checkOneLine(t, err)
		if n := len(err.Error()); n > 800 {
			t.Errorf("Error() of Decode(%.100q...) has %d bytes", in, n)
		}
	}
}

func TestValidationErrorError(t *testing.T) {
	tests := []struct {
		err  ValidationError
		want string
	}{
		{ValidationError{Field: "ts", Rule: "r"}, `field "ts": r`},
		{ValidationError{Field: FieldRecord, Rule: "not valid UTF-8"}, `record: not valid UTF-8`},
		{ValidationError{Field: "", Rule: "x"}, `record: x`},
		{ValidationError{Field: "a\nb", Rule: "line1\nline2\u00e9"}, `field "a\nb": line1\nline2\u00e9`},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %s, want %s", got, tc.want)
		}
	}
}

func TestCheckSize(t *testing.T) {
	if err := CheckSize(1048576, 1048576); err != nil {
		t.Fatalf("CheckSize(max, max) = %v, want nil", err)
	}
	if err := CheckSize(5, 0); err != nil {
		t.Fatalf("CheckSize(5, 0) = %v, want nil (no limit)", err)
	}
	err := CheckSize(1048577, 1048576)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != FieldRecord || !strings.Contains(ve.Rule, "max_record_bytes") {
		t.Fatalf("CheckSize(max+1, max) = %v, want a record ValidationError about max_record_bytes", err)
	}
	if want := "record: larger than kafka.max_record_bytes (1048576 bytes): 1048577 bytes"; err.Error() != want {
		t.Fatalf("Error() = %s, want %s", err, want)
	}
}
