package refmodel

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"projector/internal/gen"
	"projector/pkg/projections"
)

const (
	t0 = int64(1772323200000) // 2026-03-01T00:00:00Z

	second = int64(1000)
	minute = 60 * second
	hour   = 60 * minute
	day    = 24 * hour
)

// logBuilder builds a log of valid records with ids e1, e2, ...
type logBuilder struct {
	t   *testing.T
	n   int
	log []gen.Record
}

// add appends an event given as fields (id and type/ts/user set by callers).
func (b *logBuilder) add(topic string, fields map[string]any) string {
	b.t.Helper()
	if _, ok := fields["id"]; !ok {
		b.n++
		fields["id"] = "e" + strconv.Itoa(b.n)
	}
	v, err := json.Marshal(fields)
	if err != nil {
		b.t.Fatal(err)
	}
	id := fields["id"].(string)
	b.log = append(b.log, gen.Record{Topic: topic, Key: []byte(fields["user_id"].(string)), Value: v, ID: id})
	return id
}

func (b *logBuilder) view(user, product string, ts int64, extra ...string) string {
	f := map[string]any{"type": "view", "ts": ts, "user_id": user, "product_id": product}
	for i := 0; i+1 < len(extra); i += 2 {
		f[extra[i]] = extra[i+1]
	}
	return b.add("shop.views", f)
}

func (b *logBuilder) click(user string, ts int64) string {
	return b.add("shop.clicks", map[string]any{"type": "click", "ts": ts, "user_id": user})
}

func (b *logBuilder) order(user string, ts int64, items ...item) string {
	return b.add("shop.orders", map[string]any{"type": "order", "ts": ts, "user_id": user, "items": items})
}

func (b *logBuilder) cleared(user string, ts int64) string {
	return b.add("shop.views", map[string]any{"type": "history_cleared", "ts": ts, "user_id": user})
}

func (b *logBuilder) removed(user, product string, ts int64) string {
	return b.add("shop.views", map[string]any{"type": "history_item_removed", "ts": ts, "user_id": user, "product_id": product})
}

// only returns the contract defaults with just the named projections on (the
// others keep their settings: histclr uses the longer retention of both).
func only(names ...string) projections.Config {
	c := projections.Defaults()
	for _, n := range names {
		if _, ok := projections.Lookup(n); !ok {
			panic(n)
		}
	}
	for _, s := range projections.All() {
		s.SetEnabled(&c, slices.Contains(names, s.Name))
	}
	return c
}

// zset is a shorthand for a sorted-set Value.
func zset(expireAt int64, kv ...any) Value {
	z := map[string]float64{}
	for i := 0; i < len(kv); i += 2 {
		switch n := kv[i+1].(type) {
		case int64:
			z[kv[i].(string)] = float64(n)
		case int:
			z[kv[i].(string)] = float64(n)
		default:
			panic(kv[i+1])
		}
	}
	return Value{Kind: KindZSet, ZSet: z, ExpireAtMs: expireAt}
}

// str is a shorthand for a string Value.
func str(s string, expireAt int64) Value {
	return Value{Kind: KindString, Str: s, ExpireAtMs: expireAt}
}

// num is a shorthand for an integer string Value.
func num(n, expireAt int64) Value { return str(strconv.FormatInt(n, 10), expireAt) }

// assertKey checks one key of a state.
func assertKey(t *testing.T, s State, key string, want Value) {
	t.Helper()
	got, ok := s[key]
	if !ok {
		t.Errorf("key %s missing; state:\n%s", key, s.Format())
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("key %s:\n got %s\nwant %s", key, State{key: got}.Format(), State{key: want}.Format())
	}
}

// assertNoKey checks that a key is absent.
func assertNoKey(t *testing.T, s State, key string) {
	t.Helper()
	if v, ok := s[key]; ok {
		t.Errorf("key %s present: %s", key, State{key: v}.Format())
	}
}

// assertKeys checks the exact key set.
func assertKeys(t *testing.T, s State, want ...string) {
	t.Helper()
	got := sortedKeys(s)
	wantSet := map[string]bool{}
	for _, k := range want {
		wantSet[k] = true
	}
	if !reflect.DeepEqual(got, sortedKeys(wantSet)) {
		t.Errorf("keys:\n got %q\nwant %q", got, sortedKeys(wantSet))
	}
}

// newYork loads America/New_York.
func newYork(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatalf("load zone: %v", err)
	}
	return loc
}

// mustInt parses a counter value.
func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("counter %q: %v", s, err)
	}
	return n
}
