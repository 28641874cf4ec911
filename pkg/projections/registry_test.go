package projections

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"projector/internal/gen"
	"projector/pkg/events"
)

// TestRegistryIsConfig: the registry has one Spec per field of Config, in
// its order, named by the field's mapstructure tag, whose section is that
// field and whose enabled flag is the field's `enabled` key.
func TestRegistryIsConfig(t *testing.T) {
	ct := reflect.TypeFor[Config]()
	if ct.NumField() != len(registry) {
		t.Fatalf("Config has %d sections, the registry %d projections", ct.NumField(), len(registry))
	}
	for i, s := range All() {
		f := ct.Field(i)
		if tag := f.Tag.Get("mapstructure"); tag != s.Name {
			t.Errorf("Config field %d (%s) is projections.%s, registry entry %d is %q", i, f.Name, tag, i, s.Name)
		}
		var c Config
		field := reflect.ValueOf(&c).Elem().Field(i)
		if got := reflect.ValueOf(s.section(&c)).Pointer(); got != field.Addr().Pointer() {
			t.Errorf("%s: its section is not Config.%s", s.Name, f.Name)
		}
		enabled := field.FieldByName("Enabled")
		if sf, ok := f.Type.FieldByName("Enabled"); !ok || sf.Tag.Get("mapstructure") != "enabled" || enabled.Kind() != reflect.Bool {
			t.Fatalf("%s: Config.%s has no `enabled` bool", s.Name, f.Name)
		}
		s.SetEnabled(&c, true)
		if !enabled.Bool() || !s.Enabled(c) || !reflect.DeepEqual(EnabledNames(c), []string{s.Name}) {
			t.Errorf("%s: SetEnabled does not set Config.%s.Enabled alone", s.Name, f.Name)
		}
		if got, ok := Lookup(s.Name); !ok || got.Name != s.Name {
			t.Errorf("Lookup(%q) = %q, %v", s.Name, got.Name, ok)
		}
	}
	if !reflect.DeepEqual(EnabledNames(Defaults()), Names()) {
		t.Errorf("defaults enable %v, want every projection %v", EnabledNames(Defaults()), Names())
	}
	for _, s := range All() {
		c := Defaults()
		if fe := s.Check(&c); fe != nil {
			t.Errorf("%s refuses the defaults: %v", s.Name, fe)
		}
	}
}

// plannedLog plans a generated log (every event type, out-of-order events,
// duplicates planned twice) with every projection on, and returns the writes.
func plannedLog(t *testing.T, cfg Config, prefix string) []Write {
	t.Helper()
	gc := gen.DefaultConfig()
	p, err := NewPlanner(cfg, time.UTC, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []Write
	types := map[events.Type]bool{}
	for _, r := range gen.New(gc).Log(3000) {
		if r.Poison {
			continue
		}
		ev, err := events.Decode(r.Value)
		if err != nil {
			t.Fatalf("generated record %s: %v", r.ID, err)
		}
		types[ev.Type] = true
		out = p.Plan(ev, gc.Start.Add(-6*time.Hour), out) // nothing has expired
	}
	if len(types) != 5 {
		t.Fatalf("the log holds event types %v, want all five", types)
	}
	return out
}

// TestPatternsOwnEveryPlannedKey: every key a planned write touches (its
// key, its registry of scoped keys) matches a pattern of the projection
// that planned it and of no other, every pattern matches some planned key,
// and writes go to the slots the projection's Scope says. A projection
// whose Patterns miss a key would leave it behind when the replayer wipes.
func TestPatternsOwnEveryPlannedKey(t *testing.T) {
	scoped := Defaults()
	scoped.History.Scope = []string{"device", "store"}
	for _, prefix := range []string{"", "shop:"} {
		hit := map[string]bool{}
		slots := map[string]map[bool]bool{}
		for _, cfg := range []Config{Defaults(), scoped} {
			for _, w := range plannedLog(t, cfg, prefix) {
				own, ok := Lookup(w.Projection)
				if !ok {
					t.Fatalf("write %s %s names no projection (%q)", w.Kind, w.Key, w.Projection)
				}
				if slots[own.Name] == nil {
					slots[own.Name] = map[bool]bool{}
				}
				slots[own.Name][w.Global] = true
				if tag := "{g}"; w.Global != strings.Contains(w.Key, tag) {
					t.Fatalf("%s: write %s (global %v) and its key's hash tag disagree", own.Name, w.Key, w.Global)
				}
				for _, key := range []string{w.Key, w.Registry} {
					if key == "" {
						continue
					}
					for _, s := range All() {
						if owns := s.Owns(prefix, key); owns != (s.Name == own.Name) {
							t.Fatalf("key %s planned by %s: %s's patterns %v match it: %v", key, own.Name, s.Name, s.Patterns, owns)
						}
					}
					for _, p := range own.Patterns {
						if globMatch(p, strings.TrimPrefix(key, prefix)) {
							hit[own.Name+" "+p] = true
						}
					}
				}
			}
		}
		for _, s := range All() {
			for _, p := range s.Patterns {
				if !hit[s.Name+" "+p] {
					t.Errorf("prefix %q: %s's pattern %q matches no planned key", prefix, s.Name, p)
				}
			}
			want := map[Scope]map[bool]bool{ScopeUser: {false: true}, ScopeGlobal: {true: true}, ScopeUserAndGlobal: {false: true, true: true}}[s.Scope]
			if !reflect.DeepEqual(slots[s.Name], want) {
				t.Errorf("%s has scope %d but writes global=%v", s.Name, s.Scope, slots[s.Name])
			}
		}
	}
}

// TestOnlyEnabledProjectionsPlan: a planner with one projection on plans
// only that projection's writes, and some for the generated log.
func TestOnlyEnabledProjectionsPlan(t *testing.T) {
	for _, s := range All() {
		var cfg Config
		s.defaults(&cfg)
		ws := plannedLog(t, cfg, "")
		if len(ws) == 0 {
			t.Errorf("%s alone plans nothing", s.Name)
		}
		for _, w := range ws {
			if w.Projection != s.Name {
				t.Fatalf("%s alone: write %s %s by %q", s.Name, w.Kind, w.Key, w.Projection)
			}
		}
	}
}

// TestPatternsUseOnlyStar: patterns are SCAN patterns whose only wildcard is
// `*`, which globMatch implements, and never a bookkeeping pattern the
// replayer wipes separately (px:seen, px:wm, px:nwm, px:dlq, px:meta).
func TestPatternsUseOnlyStar(t *testing.T) {
	for _, s := range All() {
		if len(s.Patterns) == 0 {
			t.Errorf("%s has no key patterns", s.Name)
		}
		for _, p := range s.Patterns {
			if strings.ContainsAny(p, `?[]\`) || !strings.HasSuffix(p, ":*") {
				t.Errorf("%s: pattern %q must be <kind>:* with no other wildcard", s.Name, p)
			}
			for _, bk := range []string{"px:seen:", "px:wm:", "px:nwm:", "px:dlq:", "px:meta:", "px:cfg:", "px:lease:", "px:rwm:"} {
				if globMatch(p, bk+"{g}") {
					t.Errorf("%s: pattern %q matches bookkeeping keys %s*", s.Name, p, bk)
				}
			}
		}
	}
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{{"lv:*", "lv:{u:1}", true}, {"lv:*", "lv:", true}, {"lv:*", "lvx:1", false}, {"order:*", "orders:{u:1}", false},
		{"a*b*c", "axxbyyc", true}, {"a*b*c", "axxbyy", false}, {"abc", "abc", true}} {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pattern, tc.s, got)
		}
	}
}

// TestWithReaders: rebuilding history rebuilds last_viewed too (its views
// are guarded by history's clears) while last_viewed is on; nothing else
// reads another projection's keys.
func TestWithReaders(t *testing.T) {
	cfg := Defaults()
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"history"}, "last_viewed,history"},
		{[]string{"history", "stats"}, "last_viewed,history,stats"},
		{[]string{"last_viewed"}, "last_viewed"},
		{[]string{"trending", "orders"}, "orders,trending"},
	} {
		if got := strings.Join(WithReaders(cfg, tc.names), ","); got != tc.want {
			t.Errorf("WithReaders(%v) = %s, want %s", tc.names, got, tc.want)
		}
	}
	off := cfg
	off.LastViewed.Enabled = false
	if got := strings.Join(WithReaders(off, []string{"history"}), ","); got != "history" {
		t.Errorf("WithReaders(history) with last_viewed off = %s, want history", got)
	}
}
