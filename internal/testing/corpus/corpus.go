// Package corpus is the bad-input corpus of docs/contract.md section 2: records that break
// one rule each, with the field and a substring of the rule the decoder must
// name. pkg/events tests its decoder on them; the end-to-end suite sends them
// through a real broker and expects each in the dead-letter topic.
package corpus

import "strings"

// maxDepth is events.MaxDepth (this package must not import pkg/events,
// whose own tests import it; a test checks they agree).
const maxDepth = 16

// Case is one poison record.
type Case struct {
	// Name says what is wrong.
	Name string
	// In is the record value.
	In string
	// Field and Rule are the field the error must name and a substring of its rule.
	Field, Rule string
}

// Rec builds a record: the common fields of a valid event of type typ, then
// extra (a JSON fragment of members, may be empty).
func Rec(typ, extra string) string {
	s := `{"id":"e-1","type":"` + typ + `","ts":1700000000000,"user_id":"u42"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// Nest returns n nested arrays around v.
func Nest(n int, v string) string {
	return strings.Repeat("[", n) + v + strings.Repeat("]", n)
}

// ItemsJSON returns the items member with n valid order items.
func ItemsJSON(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"product_id":"p","quantity":1,"price_cents":5}`
	}
	return `"items":[` + strings.Join(parts, ",") + `]`
}

// Cases returns the corpus: every rule of docs/contract.md section 2 at least once, plus
// invalid UTF-8, duplicate keys, deep nesting, numbers as strings, negative
// and overflowing numbers, NUL bytes, braces and newlines in ids.
func Cases() []Case {
	return []Case{
		// The record as a whole.
		{"empty", "", "record", "not valid JSON"},
		{"blank", " \n", "record", "not valid JSON"},
		{"not UTF-8", "{\"id\":\"\xff\",\"type\":\"view\"}", "record", "not valid UTF-8"},
		{"not UTF-8 in unknown field", Rec("history_cleared", "\"x\":\"\xc3\x28\""), "record", "not valid UTF-8"},
		{"not JSON", "hello", "record", "not valid JSON"},
		{"truncated", `{"id":"e-1","type":`, "record", "not valid JSON"},
		{"truncated string", `{"id":"e-1`, "record", "not valid JSON"},
		{"unquoted key", `{id:"e-1"}`, "record", "not valid JSON"},
		{"single quotes", `{'id':'e-1'}`, "record", "not valid JSON"},
		{"trailing comma", Rec("history_cleared", `"x":1,`), "record", "not valid JSON"},
		{"trailing comma in array", Rec("history_cleared", `"x":[1,]`), "record", "not valid JSON"},
		{"missing colon", `{"id" "e-1"}`, "record", "not valid JSON"},
		{"invalid escape", Rec("history_cleared", `"x":"a\qb"`), "record", "not valid JSON"},
		{"short unicode escape", Rec("history_cleared", `"x":"\u12"`), "record", "not valid JSON"},
		{"raw control byte in unknown field", Rec("history_cleared", "\"x\":\"a\nb\""), "record", "not valid JSON"},
		{"raw control byte in a field of another type", Rec("history_cleared", "\"product_id\":\"\x06\""), "record", "not valid JSON: control byte 0x06"},
		{"raw control byte in an item of a view", Rec("view", "\"product_id\":\"p\",\"items\":[{\"product_id\":\"\x01\"}]"), "record", "control byte 0x01"},
		{"raw control byte in key", "{\"i\td\":1}", "record", "not valid JSON"},
		{"leading zero", `{"id":"e-1","type":"history_cleared","ts":01700000000000,"user_id":"u42"}`, "record", "not valid JSON"},
		{"plus sign", `{"id":"e-1","type":"history_cleared","ts":+1700000000000,"user_id":"u42"}`, "record", "not valid JSON"},
		{"bare fraction", Rec("history_cleared", `"x":1.`), "record", "not valid JSON"},
		{"NaN", Rec("history_cleared", `"x":NaN`), "record", "not valid JSON"},
		{"bad literal", Rec("history_cleared", `"x":nul`), "record", "not valid JSON"},
		{"comment", Rec("history_cleared", `"x":1 /* c */`), "record", "not valid JSON"},
		{"array", `[{"id":"e-1"}]`, "record", "must be one JSON object"},
		{"string", `"x"`, "record", "must be one JSON object"},
		{"number", `42`, "record", "must be one JSON object"},
		{"null", `null`, "record", "must be one JSON object"},
		{"trailing garbage", Rec("history_cleared", "") + " x", "record", "trailing data"},
		{"two objects", Rec("history_cleared", "") + Rec("history_cleared", ""), "record", "trailing data"},
		{"trailing NUL", Rec("history_cleared", "") + "\x00", "record", "trailing data"},
		{"deep unknown field", Rec("history_cleared", `"deep":`+Nest(maxDepth, "1")), "record", "nesting deeper than 16"},
		{"deep unknown object", Rec("history_cleared", `"deep":`+strings.Repeat(`{"a":`, maxDepth)+"1"+strings.Repeat("}", maxDepth)), "record", "nesting deeper"},
		{"deep record 100k", strings.Repeat("[", 100000), "record", "nesting deeper"},
		{"deep field 100k", `{"x":` + strings.Repeat("[", 100000), "record", "nesting deeper"},
		{"deep in items", Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5,"x":`+Nest(maxDepth-2, "")+`}]`), "record", "nesting deeper"},

		// Duplicate keys.
		{"duplicate id", `{"id":"a","id":"b","type":"history_cleared","ts":1700000000000,"user_id":"u42"}`, "id", "duplicate key"},
		{"duplicate ts", Rec("history_cleared", `"ts":1700000000001`), "ts", "duplicate key"},
		{"duplicate via escape", Rec("history_cleared", `"\u0074s":1700000000000`), "ts", "duplicate key"},
		{"duplicate unknown key", Rec("history_cleared", `"x":1,"x":1`), "x", "duplicate key"},
		{"duplicate empty key", Rec("history_cleared", `"":1,"":1`), `[""]`, "duplicate key"},
		{"duplicate in item", Rec("order", `"items":[{"product_id":"p","quantity":1,"quantity":2,"price_cents":5}]`), "items[0].quantity", "duplicate key"},
		{"duplicate in nested unknown", Rec("history_cleared", `"extra":{"a":[0,{"b":1,"b":1}]}`), "extra.a[1].b", "duplicate key"},
		{"duplicate among many keys", Rec("history_cleared", `"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1,"k12":1,"k13":1,"k5":2`), "k5", "duplicate key"},

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
		{"type unknown", Rec("foo", ""), "type", `unknown event type "foo"`},
		{"type wrong case", Rec("View", ""), "type", "unknown event type"},
		{"type empty", Rec("", ""), "type", "unknown event type"},

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
		{"view product_id missing", Rec("view", ""), "product_id", "required"},
		{"view product_id null", Rec("view", `"product_id":null`), "product_id", "required"},
		{"view product_id colon", Rec("view", `"product_id":"p:1"`), "product_id", "byte 0x3a"},
		{"view product_id number", Rec("view", `"product_id":1`), "product_id", "must be a string"},
		{"view device empty", Rec("view", `"product_id":"p1","device":""`), "device", "empty"},
		{"view device space", Rec("view", `"product_id":"p1","device":"smart tv"`), "device", "byte 0x20"},
		{"view device number", Rec("view", `"product_id":"p1","device":3`), "device", "must be a string"},
		{"view store_id too long", Rec("view", `"product_id":"p1","store_id":"`+strings.Repeat("s", 65)+`"`), "store_id", "65 bytes"},
		{"view store_id raw newline", Rec("view", "\"product_id\":\"p1\",\"store_id\":\"s\n\""), "store_id", "printable ASCII"},

		// click.
		{"click target_id empty", Rec("click", `"target_id":""`), "target_id", "empty"},
		{"click target_id space", Rec("click", `"target_id":"a b"`), "target_id", "byte 0x20"},
		{"click target_id number", Rec("click", `"target_id":5`), "target_id", "must be a string"},

		// order.
		{"order items missing", Rec("order", ""), "items", "required"},
		{"order items null", Rec("order", `"items":null`), "items", "required"},
		{"order items object", Rec("order", `"items":{"product_id":"p","quantity":1,"price_cents":5}`), "items", "must be an array"},
		{"order items string", Rec("order", `"items":"[]"`), "items", "must be an array"},
		{"order items empty", Rec("order", `"items":[]`), "items", "got 0 items"},
		{"order 101 items", Rec("order", ItemsJSON(101)), "items", "got 101 items"},
		{"order item not object", Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5},7]`), "items[1]", "must be an object"},
		{"order item null", Rec("order", `"items":[null]`), "items[0]", "must be an object"},
		{"order item empty object", Rec("order", `"items":[{}]`), "items[0].product_id", "required"},
		{"order item product_id missing", Rec("order", `"items":[{"quantity":1,"price_cents":5}]`), "items[0].product_id", "required"},
		{"order item product_id colon", Rec("order", `"items":[{"product_id":"a:b","quantity":1,"price_cents":5}]`), "items[0].product_id", "byte 0x3a"},
		{"order item product_id raw NUL", Rec("order", "\"items\":[{\"product_id\":\"a\x00\",\"quantity\":1,\"price_cents\":5}]"), "items[0].product_id", "printable ASCII"},
		{"order item quantity missing", Rec("order", `"items":[{"product_id":"p","price_cents":5}]`), "items[0].quantity", "required"},
		{"order item quantity null", Rec("order", `"items":[{"product_id":"p","quantity":null,"price_cents":5}]`), "items[0].quantity", "required"},
		{"order item quantity zero", Rec("order", `"items":[{"product_id":"p","quantity":0,"price_cents":5}]`), "items[0].quantity", "must be an integer in 1..10000"},
		{"order item quantity too big", Rec("order", `"items":[{"product_id":"p","quantity":10001,"price_cents":5}]`), "items[0].quantity", "got 10001"},
		{"order item quantity negative", Rec("order", `"items":[{"product_id":"p","quantity":-1,"price_cents":5}]`), "items[0].quantity", "got -1"},
		{"order item quantity float", Rec("order", `"items":[{"product_id":"p","quantity":1.0,"price_cents":5}]`), "items[0].quantity", "got 1.0"},
		{"order item quantity fraction", Rec("order", `"items":[{"product_id":"p","quantity":1.5,"price_cents":5}]`), "items[0].quantity", "must be an integer"},
		{"order item quantity exponent", Rec("order", `"items":[{"product_id":"p","quantity":1e3,"price_cents":5}]`), "items[0].quantity", "got 1e3"},
		{"order item quantity string", Rec("order", `"items":[{"product_id":"p","quantity":"1","price_cents":5}]`), "items[0].quantity", "got string"},
		{"order item price missing", Rec("order", `"items":[{"product_id":"p","quantity":1}]`), "items[0].price_cents", "required"},
		{"order item price negative", Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":-5}]`), "items[0].price_cents", "must be an integer in 0..100000000"},
		{"order item price negative zero", Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":-0}]`), "items[0].price_cents", "got -0"},
		{"order item price too big", Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":100000001}]`), "items[0].price_cents", "got 100000001"},
		{"order item price overflow", Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":99999999999999999999999}]`), "items[0].price_cents", "must be an integer"},
		{"order item price 1e400", Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":1e400}]`), "items[0].price_cents", "must be an integer"},
		{"order second item bad", Rec("order", `"items":[{"product_id":"p","quantity":1,"price_cents":5},{"product_id":"p","quantity":1,"price_cents":5.5}]`), "items[1].price_cents", "must be an integer"},

		// history_item_removed.
		{"history_item_removed product_id missing", Rec("history_item_removed", ""), "product_id", "required"},
		{"history_item_removed product_id brace", Rec("history_item_removed", `"product_id":"}"`), "product_id", "byte 0x7d"},
	}
}
