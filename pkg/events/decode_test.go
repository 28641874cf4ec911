package events

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// rec builds a record: the common fields of a valid event of type typ, then
// extra (a JSON fragment of members, may be empty).
func rec(typ, extra string) string {
	s := `{"id":"e-1","type":"` + typ + `","ts":1700000000000,"user_id":"u42"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// base returns the Event rec(typ, ...) decodes to, before type fields.
func base(typ Type) Event {
	return Event{ID: "e-1", Type: typ, TS: 1700000000000, UserID: "u42"}
}

// nest returns n nested arrays around v.
func nest(n int, v string) string {
	return strings.Repeat("[", n) + v + strings.Repeat("]", n)
}

// itemsJSON returns n valid order items.
func itemsJSON(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"product_id":"p","quantity":1,"price_cents":5}`
	}
	return `"items":[` + strings.Join(parts, ",") + `]`
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
		{"view defaults", rec("view", `"product_id":"p1"`), view("p1", "-", "-")},
		{"view all fields", rec("view", `"product_id":"p1","device":"mobile","store_id":"s-7"`), view("p1", "mobile", "s-7")},
		{"view null optionals", rec("view", `"product_id":"p1","device":null,"store_id":null`), view("p1", "-", "-")},
		{"view explicit dash", rec("view", `"product_id":"p1","device":"-","store_id":"-"`), view("p1", "-", "-")},
		{"view ignores fields of other types", rec("view", `"product_id":"p1","target_id":"t","items":[{"x":1}]`), view("p1", "-", "-")},
		{"view ignores wrong-typed fields of other types", rec("view", `"product_id":"p1","items":"no","target_id":7`), view("p1", "-", "-")},
		{"view ignores unknown fields", rec("view", `"product_id":"p1","ID":5,"extra":{"a":[1,2,{"b":null}],"c":1e400,"d":-0.5E-7},"u\u00e9":"\ud83d\ude00"`), view("p1", "-", "-")},
		{"view whitespace everywhere", " \t\r\n{ \"id\" : \"e-1\" , \"type\":\"view\",\n\"ts\" : 1700000000000 ,\"user_id\":\"u42\",\"product_id\":\"p1\" }\n ", view("p1", "-", "-")},
		{"fields in any order", `{"product_id":"p1","ts":1700000000000,"user_id":"u42","type":"view","id":"e-1"}`, view("p1", "-", "-")},
		{"click without target", rec("click", ""), click("")},
		{"click with target", rec("click", `"target_id":"banner-3"`), click("banner-3")},
		{"click null target", rec("click", `"target_id":null`), click("")},
		{"order one item", rec("order", `"items":[{"product_id":"p1","quantity":2,"price_cents":1999}]`), order(Item{"p1", 2, 1999})},
		{"order limits", rec("order", `"items":[{"price_cents":0,"quantity":1,"product_id":"a"},{"product_id":"b","quantity":10000,"price_cents":100000000,"note":"x"}]`),
			order(Item{"a", 1, 0}, Item{"b", 10000, 100000000})},
		{"order 100 items", rec("order", itemsJSON(100)), order(hundred...)},
		{"order ignores view fields", rec("order", `"product_id":"x y","device":7,`+itemsJSON(1)), order(Item{"p", 1, 5})},
		{"history_cleared", rec("history_cleared", ""), base(HistoryCleared)},
		{"history_cleared ignores product_id", rec("history_cleared", `"product_id":"p1"`), base(HistoryCleared)},
		{"history_item_removed", rec("history_item_removed", `"product_id":"p9"`), removed},
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
		{"unknown field nested to the depth limit", rec("history_cleared", `"deep":`+nest(MaxDepth-1, "1")), base(HistoryCleared)},
		{"items nested to the depth limit", rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5,"x":`+nest(MaxDepth-3, "")+`}]`),
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

// poisonCases are records that break one rule each: the expected Field and
// a substring of the Rule. The fuzz seed corpus uses them too.
var poisonCases = []struct {
	name, in, field, rule string
}{
	// The record as a whole.
	{"empty", "", "record", "not valid JSON"},
	{"blank", " \n", "record", "not valid JSON"},
	{"not UTF-8", "{\"id\":\"\xff\",\"type\":\"view\"}", "record", "not valid UTF-8"},
	{"not UTF-8 in unknown field", rec("history_cleared", "\"x\":\"\xc3\x28\""), "record", "not valid UTF-8"},
	{"not JSON", "hello", "record", "not valid JSON"},
	{"truncated", `{"id":"e-1","type":`, "record", "not valid JSON"},
	{"truncated string", `{"id":"e-1`, "record", "not valid JSON"},
	{"unquoted key", `{id:"e-1"}`, "record", "not valid JSON"},
	{"single quotes", `{'id':'e-1'}`, "record", "not valid JSON"},
	{"trailing comma", rec("history_cleared", `"x":1,`), "record", "not valid JSON"},
	{"trailing comma in array", rec("history_cleared", `"x":[1,]`), "record", "not valid JSON"},
	{"missing colon", `{"id" "e-1"}`, "record", "not valid JSON"},
	{"invalid escape", rec("history_cleared", `"x":"a\qb"`), "record", "not valid JSON"},
	{"short unicode escape", rec("history_cleared", `"x":"\u12"`), "record", "not valid JSON"},
	{"raw control byte in unknown field", rec("history_cleared", "\"x\":\"a\nb\""), "record", "not valid JSON"},
	{"raw control byte in a field of another type", rec("history_cleared", "\"product_id\":\"\x06\""), "record", "not valid JSON: control byte 0x06"},
	{"raw control byte in an item of a view", rec("view", "\"product_id\":\"p\",\"items\":[{\"product_id\":\"\x01\"}]"), "record", "control byte 0x01"},
	{"raw control byte in key", "{\"i\td\":1}", "record", "not valid JSON"},
	{"leading zero", `{"id":"e-1","type":"history_cleared","ts":01700000000000,"user_id":"u42"}`, "record", "not valid JSON"},
	{"plus sign", `{"id":"e-1","type":"history_cleared","ts":+1700000000000,"user_id":"u42"}`, "record", "not valid JSON"},
	{"bare fraction", rec("history_cleared", `"x":1.`), "record", "not valid JSON"},
	{"NaN", rec("history_cleared", `"x":NaN`), "record", "not valid JSON"},
	{"bad literal", rec("history_cleared", `"x":nul`), "record", "not valid JSON"},
	{"comment", rec("history_cleared", `"x":1 /* c */`), "record", "not valid JSON"},
	{"array", `[{"id":"e-1"}]`, "record", "must be one JSON object"},
	{"string", `"x"`, "record", "must be one JSON object"},
	{"number", `42`, "record", "must be one JSON object"},
	{"null", `null`, "record", "must be one JSON object"},
	{"trailing garbage", rec("history_cleared", "") + " x", "record", "trailing data"},
	{"two objects", rec("history_cleared", "") + rec("history_cleared", ""), "record", "trailing data"},
	{"trailing NUL", rec("history_cleared", "") + "\x00", "record", "trailing data"},
	{"deep unknown field", rec("history_cleared", `"deep":`+nest(MaxDepth, "1")), "record", "nesting deeper than 16"},
	{"deep unknown object", rec("history_cleared", `"deep":`+strings.Repeat(`{"a":`, MaxDepth)+"1"+strings.Repeat("}", MaxDepth)), "record", "nesting deeper"},
	{"deep record 100k", strings.Repeat("[", 100000), "record", "nesting deeper"},
	{"deep field 100k", `{"x":` + strings.Repeat("[", 100000), "record", "nesting deeper"},
	{"deep in items", rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5,"x":`+nest(MaxDepth-2, "")+`}]`), "record", "nesting deeper"},

	// Duplicate keys.
	{"duplicate id", `{"id":"a","id":"b","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "duplicate key"},
	{"duplicate ts", rec("history_cleared", `"ts":1700000000001`), "ts", "duplicate key"},
	{"duplicate via escape", rec("history_cleared", `"\u0074s":1700000000000`), "ts", "duplicate key"},
	{"duplicate unknown key", rec("history_cleared", `"x":1,"x":1`), "x", "duplicate key"},
	{"duplicate empty key", rec("history_cleared", `"":1,"":1`), `[""]`, "duplicate key"},
	{"duplicate in item", rec("order", `"items":[{"product_id":"p","quantity":1,"quantity":2,"price_cents":5}]`), "items[0].quantity", "duplicate key"},
	{"duplicate in nested unknown", rec("history_cleared", `"extra":{"a":[0,{"b":1,"b":1}]}`), "extra.a[1].b", "duplicate key"},
	{"duplicate among many keys", rec("history_cleared", `"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1,"k12":1,"k13":1,"k5":2`), "k5", "duplicate key"},

	// id.
	{"id missing", `{"type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "required"},
	{"id null", `{"id":null,"type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "required"},
	{"id number", `{"id":17,"type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "must be a string"},
	{"id object", `{"id":{},"type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "got an object"},
	{"id empty", `{"id":"","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "empty"},
	{"id too long", `{"id":"` + strings.Repeat("i", 129) + `","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "129 bytes"},
	{"id space", `{"id":"a b","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "byte 0x20"},
	{"id brace", `{"id":"a{b","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "byte 0x7b"},
	{"id closing brace", `{"id":"ab}","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "byte 0x7d"},
	{"id escaped NUL", `{"id":"a\u0000","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "byte 0x00"},
	{"id raw NUL", "{\"id\":\"a\x00\",\"type\":\"history_cleared\",\"ts\":1700000000000,\"user_id\":\"u42\"}", "id", "printable ASCII"},
	{"id escaped newline", `{"id":"a\n","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "byte 0x0a"},
	{"id raw newline", "{\"id\":\"a\nb\",\"type\":\"history_cleared\",\"ts\":1700000000000,\"user_id\":\"u42\"}", "id", "printable ASCII"},
	{"id tab", `{"id":"a\tb","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "printable ASCII"},
	{"id DEL", `{"id":"a\u007f","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "byte 0x7f"},
	{"id non-ASCII", `{"id":"caf\u00e9","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "printable ASCII"},

	// type.
	{"type missing", `{"id":"e-1","ts":1700000000000,"user_id":"u42"}`, "type", "required"},
	{"type null", `{"id":"e-1","type":null,"ts":1700000000000,"user_id":"u42"}`, "type", "required"},
	{"type number", `{"id":"e-1","type":1,"ts":1700000000000,"user_id":"u42"}`, "type", "must be a string"},
	{"type unknown", rec("foo", ""), "type", `unknown event type "foo"`},
	{"type wrong case", rec("View", ""), "type", "unknown event type"},
	{"type empty", rec("", ""), "type", "unknown event type"},

	// ts.
	{"ts missing", `{"id":"e-1","type":"history_cleared","user_id":"u42"}`, "ts", "required"},
	{"ts null", `{"id":"e-1","type":"history_cleared","ts":null,"user_id":"u42"}`, "ts", "required"},
	{"ts string", `{"id":"e-1","type":"history_cleared","ts":"1700000000000","user_id":"u42"}`, "ts", "must be an integer"},
	{"ts bool", `{"id":"e-1","type":"history_cleared","ts":true,"user_id":"u42"}`, "ts", "must be an integer"},
	{"ts float", `{"id":"e-1","type":"history_cleared","ts":1700000000000.0,"user_id":"u42"}`, "ts", "must be an integer"},
	{"ts fraction", `{"id":"e-1","type":"history_cleared","ts":1700000000000.5,"user_id":"u42"}`, "ts", "must be an integer"},
	{"ts exponent", `{"id":"e-1","type":"history_cleared","ts":1.7e12,"user_id":"u42"}`, "ts", "must be an integer"},
	{"ts negative", `{"id":"e-1","type":"history_cleared","ts":-1700000000000,"user_id":"u42"}`, "ts", "must be an integer"},
	{"ts overflow", `{"id":"e-1","type":"history_cleared","ts":99999999999999999999999,"user_id":"u42"}`, "ts", "must be an integer"},
	{"ts huge exponent", `{"id":"e-1","type":"history_cleared","ts":1e400,"user_id":"u42"}`, "ts", "must be an integer"},
	{"ts seconds", `{"id":"e-1","type":"history_cleared","ts":1700000000,"user_id":"u42"}`, "ts", "[946684800000, 4102444800000)"},
	{"ts before 2000", `{"id":"e-1","type":"history_cleared","ts":946684799999,"user_id":"u42"}`, "ts", "got 946684799999"},
	{"ts at 2100", `{"id":"e-1","type":"history_cleared","ts":4102444800000,"user_id":"u42"}`, "ts", "got 4102444800000"},
	{"ts zero", `{"id":"e-1","type":"history_cleared","ts":0,"user_id":"u42"}`, "ts", "must be an integer"},

	// user_id.
	{"user_id missing", `{"id":"e-1","type":"history_cleared","ts":1700000000000}`, "user_id", "required"},
	{"user_id null", `{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":null}`, "user_id", "required"},
	{"user_id number", `{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":42}`, "user_id", "must be a string"},
	{"user_id array", `{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":["u"]}`, "user_id", "got an array"},
	{"user_id empty", `{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":""}`, "user_id", "empty"},
	{"user_id too long", `{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":"` + strings.Repeat("u", 65) + `"}`, "user_id", "65 bytes"},
	{"user_id colon", `{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":"u:1"}`, "user_id", "byte 0x3a"},
	{"user_id space", `{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":" u1"}`, "user_id", "byte 0x20"},
	{"user_id brace", `{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":"{u1}"}`, "user_id", "byte 0x7b"},
	{"user_id escaped NUL", `{"id":"e-1","type":"history_cleared","ts":1700000000000,"user_id":"u\u0000"}`, "user_id", "byte 0x00"},

	// view.
	{"view product_id missing", rec("view", ""), "product_id", "required"},
	{"view product_id null", rec("view", `"product_id":null`), "product_id", "required"},
	{"view product_id colon", rec("view", `"product_id":"p:1"`), "product_id", "byte 0x3a"},
	{"view product_id number", rec("view", `"product_id":1`), "product_id", "must be a string"},
	{"view device empty", rec("view", `"product_id":"p1","device":""`), "device", "empty"},
	{"view device space", rec("view", `"product_id":"p1","device":"smart tv"`), "device", "byte 0x20"},
	{"view device number", rec("view", `"product_id":"p1","device":3`), "device", "must be a string"},
	{"view store_id too long", rec("view", `"product_id":"p1","store_id":"`+strings.Repeat("s", 65)+`"`), "store_id", "65 bytes"},
	{"view store_id raw newline", rec("view", "\"product_id\":\"p1\",\"store_id\":\"s\n\""), "store_id", "printable ASCII"},

	// click.
	{"click target_id empty", rec("click", `"target_id":""`), "target_id", "empty"},
	{"click target_id space", rec("click", `"target_id":"a b"`), "target_id", "byte 0x20"},
	{"click target_id number", rec("click", `"target_id":5`), "target_id", "must be a string"},

	// order.
	{"order items missing", rec("order", ""), "items", "required"},
	{"order items null", rec("order", `"items":null`), "items", "required"},
	{"order items object", rec("order", `"items":{"product_id":"p","quantity":1,"price_cents":5}`), "items", "must be an array"},
	{"order items string", rec("order", `"items":"[]"`), "items", "must be an array"},
	{"order items empty", rec("order", `"items":[]`), "items", "got 0 items"},
	{"order 101 items", rec("order", itemsJSON(101)), "items", "got 101 items"},
	{"order item not object", rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5},7]`), "items[1]", "must be an object"},
	{"order item null", rec("order", `"items":[null]`), "items[0]", "must be an object"},
	{"order item empty object", rec("order", `"items":[{}]`), "items[0].product_id", "required"},
	{"order item product_id missing", rec("order", `"items":[{"quantity":1,"price_cents":5}]`), "items[0].product_id", "required"},
	{"order item product_id colon", rec("order", `"items":[{"product_id":"a:b","quantity":1,"price_cents":5}]`), "items[0].product_id", "byte 0x3a"},
	{"order item product_id raw NUL", rec("order", "\"items\":[{\"product_id\":\"a\x00\",\"quantity\":1,\"price_cents\":5}]"), "items[0].product_id", "printable ASCII"},
	{"order item quantity missing", rec("order", `"items":[{"product_id":"p","price_cents":5}]`), "items[0].quantity", "required"},
	{"order item quantity null", rec("order", `"items":[{"product_id":"p","quantity":null,"price_cents":5}]`), "items[0].quantity", "required"},
	{"order item quantity zero", rec("order", `"items":[{"product_id":"p","quantity":0,"price_cents":5}]`), "items[0].quantity", "must be an integer in 1..10000"},
	{"order item quantity too big", rec("order", `"items":[{"product_id":"p","quantity":10001,"price_cents":5}]`), "items[0].quantity", "got 10001"},
	{"order item quantity negative", rec("order", `"items":[{"product_id":"p","quantity":-1,"price_cents":5}]`), "items[0].quantity", "got -1"},
	{"order item quantity float", rec("order", `"items":[{"product_id":"p","quantity":1.0,"price_cents":5}]`), "items[0].quantity", "got 1.0"},
	{"order item quantity fraction", rec("order", `"items":[{"product_id":"p","quantity":1.5,"price_cents":5}]`), "items[0].quantity", "must be an integer"},
	{"order item quantity exponent", rec("order", `"items":[{"product_id":"p","quantity":1e3,"price_cents":5}]`), "items[0].quantity", "got 1e3"},
	{"order item quantity string", rec("order", `"items":[{"product_id":"p","quantity":"1","price_cents":5}]`), "items[0].quantity", "got string"},
	{"order item price missing", rec("order", `"items":[{"product_id":"p","quantity":1}]`), "items[0].price_cents", "required"},
	{"order item price negative", rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":-5}]`), "items[0].price_cents", "must be an integer in 0..100000000"},
	{"order item price negative zero", rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":-0}]`), "items[0].price_cents", "got -0"},
	{"order item price too big", rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":100000001}]`), "items[0].price_cents", "got 100000001"},
	{"order item price overflow", rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":99999999999999999999999}]`), "items[0].price_cents", "must be an integer"},
	{"order item price 1e400", rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":1e400}]`), "items[0].price_cents", "must be an integer"},
	{"order second item bad", rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5},{"product_id":"p","quantity":1,"price_cents":5.5}]`), "items[1].price_cents", "must be an integer"},

	// history_item_removed.
	{"history_item_removed product_id missing", rec("history_item_removed", ""), "product_id", "required"},
	{"history_item_removed product_id brace", rec("history_item_removed", `"product_id":"}"`), "product_id", "byte 0x7d"},
}

func TestDecodePoison(t *testing.T) {
	for _, tc := range poisonCases {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("Decode(%.200q) = %+v, want an error", tc.in, ev)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Decode(%.200q) error %T %v, want *ValidationError", tc.in, err, err)
			}
			if _, ok := err.(*ValidationError); !ok {
				t.Fatalf("Decode error is %T, want *ValidationError itself", err)
			}
			if ve.Field != tc.field || !strings.Contains(ve.Rule, tc.rule) {
				t.Fatalf("Decode(%.200q) = field %q rule %q, want field %q rule containing %q", tc.in, ve.Field, ve.Rule, tc.field, tc.rule)
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
		{rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5},{"product_id":"p","quantity":1,"price_cents":5},{"product_id":"p","quantity":0,"price_cents":5}]`),
			`field "items[2].quantity": must be an integer in 1..10000; got 0`},
		{"\xff", `record: not valid UTF-8`},
		{`{"id":`, `record: not valid JSON: unexpected end of input`},
		{`{"id" 1}`, `record: not valid JSON: unexpected '1' at offset 6`},
		{rec("foo", ""), `field "type": unknown event type "foo" (want view, click, order, history_cleared or history_item_removed)`},
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
		rec(long, ""),
		`{"id":"` + long + `"}`,
		`{"id":"` + strings.Repeat("a", 5000) + `\n"}`,
		`{"id":1` + strings.Repeat("0", 5000) + `}`,
		rec("history_cleared", `"`+strings.Repeat("\\u0000", 2000)+`":1,"`+strings.Repeat("\\u0000", 2000)+`":2`),
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
