package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// Addresses used for the side that is not configured when the other one is
// (docs/contract.md section 7): configuring only Kafka brokers means Redis on
// DefaultRedisAddr, configuring only Redis addresses means Kafka on
// DefaultKafkaAddr.
const (
	DefaultKafkaAddr = "127.0.0.1:9092"
	DefaultRedisAddr = "127.0.0.1:6379"
)

const (
	keyBrokers    = "kafka.brokers"
	keyRedisAddrs = "redis.addrs"
)

// Load builds the validated configuration. Call it after the FlagSet given
// to Register has been parsed; fl may be nil (no flags). Sources, in
// increasing precedence: the defaults (Defaults), the YAML file named by
// --config, the PROJECTOR_* variables of environ ("NAME=value" entries, as
// os.Environ returns them; the first entry of a name wins) and the flags
// (convenience flags, then --set in order). Lists are comma-separated in the
// environment and in flags, sequences (or one comma-separated string) in
// YAML.
//
// With kafka.brokers and redis.addrs both unset, Embedded is true and both
// stay empty; with either set, the other defaults to DefaultKafkaAddr or
// DefaultRedisAddr.
//
// Every configuration error is a *KeyError (ExitCode 2) whose message is one
// line naming the key, the environment variable or the flag.
func Load(fl *Flags, environ []string) (Config, error) {
	if fl != nil && fl.fs != nil && !fl.fs.Parsed() {
		return Config{}, errors.New("config: Load called before the flag set was parsed")
	}
	s := newSchema()
	v := viper.New()
	def := Defaults()
	for _, f := range s.fields {
		if f.key != keyBrokers && f.key != keyRedisAddrs {
			v.SetDefault(f.key, f.get(&def))
		}
	}
	if file := fl.ConfigFile(); file != "" {
		m, err := readFile(file, s)
		if err != nil {
			return Config{}, err
		}
		if err := v.MergeConfigMap(m); err != nil {
			return Config{}, keyErr("--config", fmt.Sprintf("%s: %v", file, err))
		}
	}
	if err := applyEnv(v, s, environ); err != nil {
		return Config{}, err
	}
	if err := applyFlags(v, s, fl); err != nil {
		return Config{}, err
	}

	var c Config
	for _, f := range s.fields {
		raw := v.Get(f.key)
		if raw == nil {
			continue // kafka.brokers or redis.addrs, unset
		}
		val, err := decode(f, raw)
		if err != nil {
			return Config{}, err
		}
		f.set(&c, val)
	}
	if err := deriveEmbedded(&c, v.IsSet(keyBrokers), v.IsSet(keyRedisAddrs)); err != nil {
		return Config{}, err
	}
	if err := validate(&c, s); err != nil {
		return Config{}, err
	}
	return c, nil
}

// deriveEmbedded sets Embedded and the default address of the unset side.
func deriveEmbedded(c *Config, brokersSet, addrsSet bool) error {
	if brokersSet && len(c.Kafka.Brokers) == 0 {
		return keyErr(keyBrokers, "must not be empty (leave it unset, with redis.addrs unset too, for embedded mode)")
	}
	if addrsSet && len(c.Redis.Addrs) == 0 {
		return keyErr(keyRedisAddrs, "must not be empty (leave it unset, with kafka.brokers unset too, for embedded mode)")
	}
	c.Embedded = !brokersSet && !addrsSet
	if c.Embedded {
		return nil
	}
	if !brokersSet {
		c.Kafka.Brokers = []string{DefaultKafkaAddr}
	}
	if !addrsSet {
		c.Redis.Addrs = []string{DefaultRedisAddr}
	}
	return nil
}

// readFile reads and parses the YAML file and rejects unknown keys.
func readFile(file string, s schema) (map[string]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, keyErr("--config", fmt.Sprintf("cannot read config file: %v", err))
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, keyErr("--config", fmt.Sprintf("%s: invalid YAML: %v", file, err))
	}
	if err := checkKeys(m, "", s, file); err != nil {
		return nil, err
	}
	return m, nil
}

// checkKeys walks a parsed YAML mapping and reports the first (in sorted
// order) key that is neither a key of section 8 nor a section holding keys.
// A null section or value counts as absent.
func checkKeys(m map[string]any, prefix string, s schema, file string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if _, ok := s.byKey[key]; ok {
			continue
		}
		if !s.sections[key] {
			return keyErr(key, "unknown key (in "+file+")")
		}
		var sub map[string]any
		switch x := m[k].(type) {
		case nil:
			continue
		case map[string]any:
			sub = x
		case map[any]any:
			sub = make(map[string]any, len(x))
			for kk, vv := range x {
				sub[fmt.Sprint(kk)] = vv
			}
		default:
			return keyErr(key, fmt.Sprintf("must be a mapping of keys (got %s) (in %s)", describe(x), file))
		}
		if err := checkKeys(sub, key, s, file); err != nil {
			return err
		}
	}
	return nil
}

// applyEnv sets the PROJECTOR_* variables of environ on v, rejecting
// unknown names.
func applyEnv(v *viper.Viper, s schema, environ []string) error {
	vals := map[string]string{}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, envPrefix) {
			continue
		}
		if _, dup := vals[name]; !dup {
			vals[name] = val
		}
	}
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		key, ok := s.byEnv[name]
		if !ok {
			return keyErr(name, "unknown environment variable")
		}
		v.Set(key, vals[name])
	}
	return nil
}

// applyFlags sets the convenience flags given on the command line, then
// every --set in order, on v.
func applyFlags(v *viper.Viper, s schema, fl *Flags) error {
	if fl == nil || fl.fs == nil {
		return nil
	}
	for _, c := range convenienceFlags() {
		if f := fl.fs.Lookup(c.name); f != nil && f.Changed {
			v.Set(c.key, f.Value.String())
		}
	}
	if fl.sets == nil {
		return nil
	}
	for _, kv := range *fl.sets {
		key, val, ok := strings.Cut(kv, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return keyErr("--set", fmt.Sprintf("want key=value (got %q)", kv))
		}
		if _, known := s.byKey[key]; !known {
			if s.sections[key] {
				return keyErr(key, "is a group of keys, set them one by one (in --set)")
			}
			return keyErr(key, "unknown key (in --set)")
		}
		v.Set(key, val)
	}
	return nil
}
