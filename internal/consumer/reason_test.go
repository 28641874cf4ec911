package consumer

import (
	"sort"
	"testing"

	"projector/internal/gen"
	"projector/pkg/events"
)

func TestReasonClassExamples(t *testing.T) {
	cases := []struct{ value, class string }{
		{`{"id":"e1","type":"view","ts":1,"user_id":"u1","product_id":"p1"}`, "bad ts"},
		{`{"id":"e1","type":"view","ts":99999999999999,"user_id":"u1","product_id":"p1"}`, "bad ts"},
		{`{"id":"e1","type":"view","user_id":"u1","product_id":"p1"}`, "missing ts"},
		{`{"id":"e1","type":"buy","ts":1767225600000,"user_id":"u1"}`, "unknown type"},
		{`{"id":"e1","type":"order","ts":1767225600000,"user_id":"u1","items":[{"product_id":"p1","quantity":1,"price_cents":1},{"product_id":"p2","quantity":0,"price_cents":1}]}`, "bad items[].quantity"},
		{`{"id":"e1","id":"e2"}`, "duplicate key"},
		{`{"id":"e1","x":{"y":1,"y":2}}`, "duplicate key"},
		{`{"id":`, "not JSON"},
		{`[1]`, "not an object"},
		{"\xff", "not UTF-8"},
	}
	for _, c := range cases {
		_, err := events.Decode([]byte(c.value))
		if err == nil {
			t.Fatalf("%s decodes", c.value)
		}
		if got := ReasonClass(err.Error()); got != c.class {
			t.Errorf("ReasonClass(%q) = %q, want %q", err.Error(), got, c.class)
		}
	}
	if got := ReasonClass(events.CheckSize(2000, 1000).Error()); got != "too large" {
		t.Errorf("class of a record too large: %q", got)
	}
	if got := ReasonClass("write failed"); got != "other" {
		t.Errorf("class of a reason that is no validation error: %q", got)
	}
}

// Every kind of poison the generator makes falls into a small set of
// classes, none of them a catch-all.
func TestReasonClassOfGeneratedPoison(t *testing.T) {
	cfg := gen.DefaultConfig()
	cfg.PoisonRate = 1
	g := gen.New(cfg)
	classes := map[string]int{}
	for _, r := range g.Log(5000) {
		_, err := events.Decode(r.Value)
		if err == nil {
			t.Fatalf("poison record %q decodes", r.Reason)
		}
		c := ReasonClass(err.Error())
		switch c {
		case "other", "bad field", "bad record":
			t.Errorf("%s (%q) has the catch-all class %q", r.Reason, err, c)
		}
		classes[c]++
	}
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	if len(classes) < 8 || len(classes) > 24 {
		t.Errorf("%d classes %v, want between 8 and 24", len(classes), names)
	}
}
