package refmodel

import (
	"strings"
	"testing"

	"projector/internal/gen"
	"projector/pkg/projections"
)

// TestModelCoversTheRegistry walks the projection registry over a generated
// log: every key the model produces belongs to exactly one projection (by
// its key patterns), each projection's patterns (bookkeeping `px:` keys
// aside, the model leaves them out) match keys of the model, a projection
// switched off leaves no key of its patterns, and one switched on alone
// leaves only its own keys. A projection registered without a rule here
// fails.
func TestModelCoversTheRegistry(t *testing.T) {
	const prefix = "shop:"
	log := gen.New(gen.DefaultConfig()).Log(3000)
	scoped := projections.Defaults()
	scoped.History.Scope = []string{"device", "store"}
	owner := func(key string) []string {
		var out []string
		for _, s := range projections.All() {
			if s.Owns(prefix, key) {
				out = append(out, s.Name)
			}
		}
		return out
	}
	hit := map[string]bool{}
	for _, cfg := range []projections.Config{projections.Defaults(), scoped} {
		for key := range Expected(Options{Projections: cfg, KeyPrefix: prefix}, log) {
			names := owner(key)
			if len(names) != 1 {
				t.Fatalf("model key %s belongs to projections %v, want exactly one", key, names)
			}
			s, _ := projections.Lookup(names[0])
			for _, p := range s.Patterns {
				if (projections.Spec{Patterns: []string{p}}).Owns(prefix, key) {
					hit[s.Name+" "+p] = true
				}
			}
		}
	}
	for _, s := range projections.All() {
		for _, p := range s.Patterns {
			if !hit[s.Name+" "+p] && !strings.HasPrefix(p, "px:") {
				t.Errorf("the model writes no key of %s matching %s", s.Name, p)
			}
		}
		off := projections.Defaults()
		s.SetEnabled(&off, false)
		for key := range Expected(Options{Projections: off, KeyPrefix: prefix}, log) {
			if s.Owns(prefix, key) {
				t.Errorf("%s switched off: the model still writes %s", s.Name, key)
				break
			}
		}
		alone := Expected(Options{Projections: only(s.Name), KeyPrefix: prefix}, log)
		if len(alone) == 0 {
			t.Errorf("%s alone: the model writes nothing", s.Name)
		}
		for key := range alone {
			if !s.Owns(prefix, key) {
				t.Errorf("%s alone: the model writes %s", s.Name, key)
				break
			}
		}
	}
}
