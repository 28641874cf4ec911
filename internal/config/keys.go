package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// kind is the value type of a configuration key.
type kind int

const (
	kindString kind = iota
	kindInt
	kindBool
	kindDuration
	kindList
)

// field is one key of section 8, found by walking Config's mapstructure tags,
// so a field added to Config or projections.Config becomes a key by itself.
type field struct {
	key   string // dotted key, e.g. projections.last_viewed.size
	index []int  // reflect field index path into Config
	kind  kind
}

// envPrefix starts every environment variable name.
const envPrefix = "PROJECTOR_"

// envName is the environment variable of a key: PROJECTOR_ + the key
// upper-cased with '.' as '_'.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// fields lists every key in declaration order (the order of section 8).
// It panics if Config holds a field type that has no key kind: that is a
// programming error every test of this package catches.
func fields() []field {
	var out []field
	walkFields(reflect.TypeOf(Config{}), "", nil, &out)
	return out
}

func walkFields(t reflect.Type, prefix string, index []int, out *[]field) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("mapstructure")
		if tag == "-" || !sf.IsExported() {
			continue
		}
		if tag == "" {
			panic(fmt.Sprintf("config: field %s of %s has no mapstructure tag", sf.Name, t))
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		idx := append(append([]int(nil), index...), i)
		ft := sf.Type
		switch {
		case ft == reflect.TypeFor[time.Duration]():
			*out = append(*out, field{key, idx, kindDuration})
		case ft == reflect.TypeFor[[]string]():
			*out = append(*out, field{key, idx, kindList})
		case ft.Kind() == reflect.String:
			*out = append(*out, field{key, idx, kindString})
		case ft.Kind() == reflect.Int:
			*out = append(*out, field{key, idx, kindInt})
		case ft.Kind() == reflect.Bool:
			*out = append(*out, field{key, idx, kindBool})
		case ft.Kind() == reflect.Struct:
			walkFields(ft, key, idx, out)
		default:
			panic(fmt.Sprintf("config: key %s has unsupported type %s", key, ft))
		}
	}
}

// schema indexes the keys for lookups by key, section and environment name.
type schema struct {
	fields   []field
	byKey    map[string]field
	sections map[string]bool   // every proper prefix of a key: kafka, projections.stats, ...
	byEnv    map[string]string // PROJECTOR_KAFKA_BROKERS -> kafka.brokers
}

func newSchema() schema {
	s := schema{
		fields:   fields(),
		byKey:    map[string]field{},
		sections: map[string]bool{},
		byEnv:    map[string]string{},
	}
	for _, f := range s.fields {
		s.byKey[f.key] = f
		s.byEnv[envName(f.key)] = f.key
		for i, r := range f.key {
			if r == '.' {
				s.sections[f.key[:i]] = true
			}
		}
	}
	return s
}

// get returns the key's value in c.
func (f field) get(c *Config) any {
	return reflect.ValueOf(c).Elem().FieldByIndex(f.index).Interface()
}

// set stores v (of the field's Go type) into c.
func (f field) set(c *Config, v any) {
	dst := reflect.ValueOf(c).Elem().FieldByIndex(f.index)
	dst.Set(reflect.ValueOf(v).Convert(dst.Type()))
}
