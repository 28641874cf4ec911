package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// field is one member of a hand-built JSON object; raw is its JSON value as
// written (which lets poison builders write what encoding/json never would).
type field struct{ name, raw string }

// object writes the fields as a JSON object, in order, duplicates included.
func object(fields ...field) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(f.name))
		b.WriteByte(':')
		b.WriteString(f.raw)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// quote returns s as a JSON string (s must be valid UTF-8).
func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("gen: quote %q: %v", s, err)) // strings always marshal
	}
	return string(b)
}

// poisonCase builds one kind of poison value. base holds the fields of a
// valid view (id, type, ts, user_id, product_id); it returns the value and
// whether the record still carries a valid id.
type poisonCase struct {
	reason string
	build  func(base map[string]string) (value []byte, idValid bool)
}

// view returns the view fields in order, leaving out the named ones and
// replacing the raw value of those in repl.
func view(base map[string]string, omit string, repl map[string]string) []field {
	var out []field
	for _, name := range []string{"id", "type", "ts", "user_id", "product_id"} {
		if name == omit {
			continue
		}
		raw := base[name]
		if r, ok := repl[name]; ok {
			raw = r
		}
		out = append(out, field{name, raw})
	}
	return out
}

// order returns order fields with the given raw items.
func order(base map[string]string, items string) []field {
	return []field{{"id", base["id"]}, {"type", `"order"`}, {"ts", base["ts"]}, {"user_id", base["user_id"]}, {"items", items}}
}

// valid wraps a builder of values that keep a valid id.
func valid(f func(map[string]string) []byte) func(map[string]string) ([]byte, bool) {
	return func(b map[string]string) ([]byte, bool) { return f(b), true }
}

// invalid wraps a builder of values without a valid id.
func invalid(f func(map[string]string) []byte) func(map[string]string) ([]byte, bool) {
	return func(b map[string]string) ([]byte, bool) { return f(b), false }
}

// poisonCases lists every kind of poison the generator makes.
func poisonCases() []poisonCase {
	repl := func(name, raw string) func(map[string]string) []byte {
		return func(b map[string]string) []byte { return object(view(b, "", map[string]string{name: raw})...) }
	}
	omit := func(name string) func(map[string]string) []byte {
		return func(b map[string]string) []byte { return object(view(b, name, nil)...) }
	}
	nested := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	return []poisonCase{
		{"not JSON: truncated object", invalid(func(b map[string]string) []byte {
			v := object(view(b, "", nil)...)
			return v[:len(v)-4]
		})},
		{"not JSON: plain text", invalid(func(b map[string]string) []byte {
			return []byte("view " + b["user_id"] + " " + b["product_id"])
		})},
		{"not a JSON object: array", invalid(func(b map[string]string) []byte {
			return append(append([]byte("["), object(view(b, "", nil)...)...), ']')
		})},
		{"not a JSON object: null", invalid(func(map[string]string) []byte { return []byte("null") })},
		{"missing id", invalid(omit("id"))},
		{"missing type", valid(omit("type"))},
		{"missing ts", valid(omit("ts"))},
		{"missing user_id", valid(omit("user_id"))},
		{"view without product_id", valid(omit("product_id"))},
		{"ts is a string", valid(func(b map[string]string) []byte { return repl("ts", quote(b["ts"]))(b) })},
		{"ts is not an integer", valid(func(b map[string]string) []byte { return repl("ts", b["ts"]+".5")(b) })},
		{"ts before 2000", valid(repl("ts", strconv.FormatInt(minTS-1, 10)))},
		{"ts not before 2100", valid(repl("ts", strconv.FormatInt(maxTS, 10)))},
		{"ts negative", valid(repl("ts", "-1"))},
		{"unknown type purchase", valid(repl("type", `"purchase"`))},
		{"unknown type View (case)", valid(repl("type", `"View"`))},
		{"type is empty", valid(repl("type", `""`))},
		{"user_id with a space", valid(repl("user_id", `"u 1"`))},
		{"user_id with ':'", valid(repl("user_id", `"u:1"`))},
		{"user_id with '{'", valid(repl("user_id", `"u{1"`))},
		{"user_id longer than 64 bytes", valid(repl("user_id", quote("u"+strings.Repeat("z", 64))))},
		{"product_id with '}'", valid(repl("product_id", `"p}1"`))},
		{"order with 0 items", valid(func(b map[string]string) []byte { return object(order(b, `[]`)...) })},
		{"order without items", valid(func(b map[string]string) []byte { return object(order(b, `[]`)[:4]...) })},
		{"order item with quantity 0", valid(func(b map[string]string) []byte {
			return object(order(b, `[{"product_id":"p1","quantity":1,"price_cents":100},{"product_id":"p2","quantity":0,"price_cents":100}]`)...)
		})},
		{"order item with quantity 10001", valid(func(b map[string]string) []byte {
			return object(order(b, `[{"product_id":"p1","quantity":10001,"price_cents":100}]`)...)
		})},
		{"order item with negative price", valid(func(b map[string]string) []byte {
			return object(order(b, `[{"product_id":"p1","quantity":1,"price_cents":-1}]`)...)
		})},
		{"order item without price_cents", valid(func(b map[string]string) []byte {
			return object(order(b, `[{"product_id":"p1","quantity":1}]`)...)
		})},
		{"invalid UTF-8 in an unknown field", valid(func(b map[string]string) []byte {
			return object(append(view(b, "", nil), field{"note", "\"caf\xe9\""})...)
		})},
		{"invalid UTF-8 in product_id", valid(repl("product_id", "\"p\xff1\""))},
		{"duplicate JSON key ts", valid(func(b map[string]string) []byte {
			return object(append(view(b, "", nil), field{"ts", strconv.FormatInt(minTS+1, 10)})...)
		})},
		{"duplicate JSON key id", invalid(func(b map[string]string) []byte {
			return object(append(view(b, "", nil), field{"id", `"other-id"`})...)
		})},
		{"unknown field nested 100 deep", valid(func(b map[string]string) []byte {
			return object(append(view(b, "", nil), field{"deep", nested})...)
		})},
		{"NUL byte in id", invalid(repl("id", `"ev-nul\u0000x"`))},
		{"empty id", invalid(repl("id", `""`))},
		{"id longer than 128 bytes", invalid(repl("id", quote("ev-"+strings.Repeat("9", 126))))},
		{"id with '{'", invalid(repl("id", `"ev{1}"`))},
	}
}

// poison builds a poison record of a random kind on a random input topic.
func (g *Generator) poison(ts int64) Record {
	user := g.pickUser()
	id := g.nextID()
	base := map[string]string{
		"id":         quote(id),
		"type":       `"view"`,
		"ts":         strconv.FormatInt(clampTS(ts), 10),
		"user_id":    quote(user),
		"product_id": quote(g.pickProduct()),
	}
	cases := poisonCases()
	c := cases[g.rng.IntN(len(cases))]
	value, idValid := c.build(base)
	topics := []string{g.cfg.ViewsTopic, g.cfg.ClicksTopic, g.cfg.OrdersTopic}
	rec := Record{Topic: topics[g.rng.IntN(len(topics))], Key: []byte(user), Value: value, Poison: true, Reason: c.reason}
	if g.rng.Float64() < emptyPoisonKey {
		rec.Key = nil
	}
	if idValid {
		rec.ID = id
	}
	return rec
}
