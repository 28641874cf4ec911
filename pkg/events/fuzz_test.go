package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"projector/internal/testing/corpus"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// validSeeds returns valid records of every type.
func validSeeds() []string {
	return []string{
		typicalView,
		typicalOrder,
		corpus.Rec("view", `"product_id":"p1"`),
		corpus.Rec("view", `"product_id":"p1","device":null,"store_id":"s1"`),
		corpus.Rec("click", ""),
		corpus.Rec("click", `"target_id":"t-1","extra":[1,2.5,-3e-2,true,false,null,"x",{"a":{}}]`),
		corpus.Rec("order", corpus.ItemsJSON(3)),
		corpus.Rec("history_cleared", `"product_id":"ignored"`),
		corpus.Rec("history_item_removed", `"product_id":"p\u0039"`),
		`{"id":"a\"b\\c","type":"history_cleared","ts":946684800000,"user_id":"u"}`,
		corpus.Rec("history_cleared", `"deep":`+corpus.Nest(MaxDepth-1, "")),
	}
}

// The records BenchmarkDecode measures: a typical view of about 300 bytes
// (with the extra fields producers add) and a typical 3-item order.
const (
	typicalView = `{"id":"0b7c6f1e-4a2d-4f5b-9c1a-2f3e4d5c6b7a","type":"view","ts":1764669600123,` +
		`"user_id":"user-8842197","product_id":"sku-000123456","device":"mobile","store_id":"store-de-berlin-01",` +
		`"session_id":"s-5f0c2b9a8e7d","referrer":"https://shop.example.com/c/shoes?page=2","page":"product",` +
		`"app_version":"4.12.0"}`
	typicalOrder = `{"id":"9f1d2c3b-7e6a-4b5c-8d9e-0a1b2c3d4e5f","type":"order","ts":1764669600123,` +
		`"user_id":"user-8842197","items":[{"product_id":"sku-000123456","quantity":2,"price_cents":4999},` +
		`{"product_id":"sku-000987654","quantity":1,"price_cents":129900},` +
		`{"product_id":"sku-000555555","quantity":3,"price_cents":350}],"currency":"EUR","channel":"web"}`
)

func FuzzDecode(f *testing.F) {
	for _, s := range validSeeds() {
		f.Add([]byte(s))
	}
	for _, tc := range poisonCases {
		if len(tc.In) <= 4096 {
			f.Add([]byte(tc.In))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Decode(data)
		if err != nil {
			checkPoison(t, data, err)
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Decode(%q) accepted invalid JSON: %+v", data, ev)
		}
		if err := Validate(ev); err != nil {
			t.Fatalf("Validate(Decode(%q)) = %v", data, err)
		}
		b, err := Encode(ev)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", ev, err)
		}
		again, err := Decode(b)
		if err != nil || !reflect.DeepEqual(again, ev) {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v (JSON %s)", ev, again, err, b)
		}
		compareStdlib(t, data, ev)
	})
}

// checkPoison checks the form of a Decode error.
func checkPoison(t *testing.T, data []byte, err error) {
	t.Helper()
	ve, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("Decode(%q) error is %T %v, want *ValidationError", data, err, err)
	}
	if ve.Field == "" || ve.Rule == "" {
		t.Fatalf("Decode(%q) = %#v: empty Field or Rule", data, ve)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") || len(msg) > 1024 {
		t.Fatalf("Decode(%q) error is not one bounded line: %q", data, msg)
	}
	if strings.HasPrefix(ve.Rule, "not valid JSON") && json.Valid(data) {
		t.Fatalf("Decode(%q) says %v but encoding/json accepts it", data, err)
	}
}

// compareStdlib checks an accepted record against encoding/json's reading
// of it: the same values for the fields that make the event.
func compareStdlib(t *testing.T, data []byte, ev Event) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("encoding/json rejects accepted record %q: %v", data, err)
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	num := func(v any) int64 {
		n, _ := v.(json.Number)
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			t.Fatalf("encoding/json reads %v as %v in accepted record %q", v, err, data)
		}
		return i
	}
	want := Event{ID: str("id"), Type: Type(str("type")), TS: num(m["ts"]), UserID: str("user_id")}
	switch want.Type {
	case View:
		want.ProductID, want.Device, want.StoreID = str("product_id"), str("device"), str("store_id")
		if want.Device == "" {
			want.Device = NoValue
		}
		if want.StoreID == "" {
			want.StoreID = NoValue
		}
	case Click:
		want.TargetID = str("target_id")
	case Order:
		for _, v := range m["items"].([]any) {
			o := v.(map[string]any)
			p, _ := o["product_id"].(string)
			want.Items = append(want.Items, Item{ProductID: p, Quantity: num(o["quantity"]), PriceCents: num(o["price_cents"])})
		}
	case HistoryItemRemoved:
		want.ProductID = str("product_id")
	}
	if !reflect.DeepEqual(ev, want) {
		t.Fatalf("Decode(%q) = %+v, encoding/json reads %+v", data, ev, want)
	}
}

// TestFuzzSeeds runs the fuzz property over the seeds and some mutations of
// them in every plain go test run.
func TestFuzzSeeds(t *testing.T) {
	var inputs [][]byte
	for _, s := range validSeeds() {
		inputs = append(inputs, []byte(s))
		for i := 0; i < len(s); i += 7 {
			inputs = append(inputs, []byte(s[:i]), []byte(s[:i]+s[i+1:]), []byte(s[:i]+`"`+s[i:]))
		}
	}
	for _, tc := range poisonCases {
		inputs = append(inputs, []byte(tc.In))
	}
	for _, data := range inputs {
		ev, err := Decode(data)
		if err != nil {
			checkPoison(t, data, err)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("not a ValidationError: %v", err)
			}
			continue
		}
		if !json.Valid(data) {
			t.Fatalf("Decode(%q) accepted invalid JSON", data)
		}
		compareStdlib(t, data, ev)
	}
}
