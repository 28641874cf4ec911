package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"projector/pkg/projections"
)

// TestRegistryKeys walks the projection registry: each projection has its
// keys projections.<name>.* (enabled among them) in the loader, in
// configs/consumer.yaml and in docs/contract.md section 8, its enabled key
// switches exactly it off, and every projections.* key belongs to a
// registered projection.
func TestRegistryKeys(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	var example map[string]any
	if err := yaml.Unmarshal(data, &example); err != nil {
		t.Fatal(err)
	}
	documented := contractKeys(t)
	s := newSchema()
	for _, spec := range projections.All() {
		section := "projections." + spec.Name
		var keys []string
		for _, f := range s.fields {
			if strings.HasPrefix(f.key, section+".") {
				keys = append(keys, f.key)
			}
		}
		if f, ok := s.byKey[section+".enabled"]; !ok || f.kind != kindBool {
			t.Errorf("%s has no bool key %s.enabled (keys %v)", spec.Name, section, keys)
		}
		for _, key := range keys {
			if _, ok := lookup(example, key); !ok {
				t.Errorf("%s: %s is missing from %s", spec.Name, key, exampleFile)
			}
			if !documented[key] {
				t.Errorf("%s: %s has no row in docs/contract.md section 8", spec.Name, key)
			}
		}
		c := mustLoad(t, "", nil, "--set", section+".enabled=false")
		want := slices.DeleteFunc(projections.Names(), func(n string) bool { return n == spec.Name })
		if got := projections.EnabledNames(c.Projections); !reflect.DeepEqual(got, want) {
			t.Errorf("--set %s.enabled=false enables %v, want %v", section, got, want)
		}
	}
	for _, f := range s.fields {
		name, ok := strings.CutPrefix(f.key, "projections.")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, ".")
		if _, ok := projections.Lookup(name); !ok {
			t.Errorf("key %s belongs to no registered projection", f.key)
		}
	}
}
