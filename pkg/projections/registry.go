package projections

import "strings"

// Scope says which hash slots a projection's keys live in.
type Scope uint8

// The scopes.
const (
	// ScopeUser: every key is in the event user's `{u:<user>}` slot.
	ScopeUser Scope = iota + 1
	// ScopeUserAndGlobal: keys in the user's slot and in `{g}`; an event's
	// user writes are planned before its global ones.
	ScopeUserAndGlobal
	// ScopeGlobal: every key is in the `{g}` slot.
	ScopeGlobal
)

// String names the scope (for test failures and logs).
func (s Scope) String() string {
	switch s {
	case ScopeUser:
		return "user"
	case ScopeUserAndGlobal:
		return "user and global"
	case ScopeGlobal:
		return "global"
	}
	return "unknown"
}

// RebuildMode is how the replayer rebuilds a projection next to running
// consumers (docs/contract.md section 6.2).
type RebuildMode uint8

// The rebuild modes.
const (
	// RebuildPause rebuilds by a chase with the consumers running, handed
	// back with them paused for a moment (docs/contract.md section 6.2).
	RebuildPause RebuildMode = iota + 1
	// RebuildHold holds the projection in the consumers' global script, which
	// can leave it out atomically only because all its keys are in `{g}`.
	RebuildHold
)

// Spec declares one projection: everything the planner, the configuration,
// the wipe and the rebuild of the replayer know about it. Each projection's
// file holds its Spec; registry (config.go) lists them.
type Spec struct {
	// Name is the configuration name: the keys under projections.<Name>.
	Name string
	// Scope is where its keys live; it decides the plan order and Rebuild.
	Scope Scope
	// Patterns are SCAN patterns (without redis.key_prefix, `*` the only
	// wildcard) matching every key it writes and no key of another
	// projection or of the bookkeeping: the replayer wipes them.
	Patterns []string
	// ReadsFrom names the projections whose keys its writes read (a guard
	// checked where the write is applied): rebuilding one of them rebuilds
	// it too (WithReaders), since its writes decided while their keys were
	// wiped or held by a rebuild could differ from what they decide once
	// rebuilt.
	ReadsFrom []string
	// section returns its configuration section in c.
	section func(c *Config) section
	// defaults sets its section in c to the contract's defaults.
	defaults func(c *Config)
	// check returns the first value of c it refuses (nil: none), and may
	// normalise its section. It sees the section whether enabled or not.
	check func(c *Config) *FieldError
	// build returns the projection planning with configuration c and keys k.
	build func(c Config, k Keys) Projection
}

// section is a projection's configuration section (a field of Config): its
// enabled flag and its own fields.
type section interface {
	enabledFlag() *bool
}

// FieldError is a configuration value a projection refuses.
type FieldError struct {
	// Field is the key below projections.<name>, e.g. "size".
	Field string
	// Problem says what is wrong, e.g. "must be at least 1 (got 0)".
	Problem string
}

// Error returns "<field>: <problem>".
func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// All returns every projection's Spec in the contract's order.
func All() []Spec {
	out := make([]Spec, len(registry))
	for i, s := range registry {
		out[i] = *s
	}
	return out
}

// Names lists the projection names in the contract's order.
func Names() []string {
	out := make([]string, len(registry))
	for i, s := range registry {
		out[i] = s.Name
	}
	return out
}

// Lookup returns the projection named name.
func Lookup(name string) (Spec, bool) {
	for _, s := range registry {
		if s.Name == name {
			return *s, true
		}
	}
	return Spec{}, false
}

// EnabledNames lists the projections enabled in cfg, in the contract's order.
func EnabledNames(cfg Config) []string {
	var out []string
	for _, s := range registry {
		if s.Enabled(cfg) {
			out = append(out, s.Name)
		}
	}
	return out
}

// WithReaders returns names and every projection enabled in cfg whose
// writes read the keys of one of them (Spec.ReadsFrom), in the contract's
// order.
func WithReaders(cfg Config, names []string) []string {
	in := map[string]bool{}
	for _, n := range names {
		in[n] = true
	}
	for grown := true; grown; { // until no reader of a reader is added
		grown = false
		for _, s := range registry {
			for _, r := range s.ReadsFrom {
				if !in[s.Name] && in[r] && s.Enabled(cfg) {
					in[s.Name], grown = true, true
				}
			}
		}
	}
	var out []string
	for _, s := range registry {
		if in[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}

// Enabled reports whether the projection is on in cfg.
func (s Spec) Enabled(cfg Config) bool { return *s.section(&cfg).enabledFlag() }

// SetEnabled switches the projection on or off in cfg.
func (s Spec) SetEnabled(cfg *Config, on bool) { *s.section(cfg).enabledFlag() = on }

// Check returns the first value of the projection's section in cfg that it
// refuses, or nil; it may normalise the section (e.g. the order of a list).
func (s Spec) Check(cfg *Config) *FieldError {
	if s.check == nil {
		return nil
	}
	return s.check(cfg)
}

// Rebuild is how the replayer rebuilds the projection next to running
// consumers: held when all its keys are global, else with the consumers paused.
func (s Spec) Rebuild() RebuildMode {
	if s.Scope == ScopeGlobal {
		return RebuildHold
	}
	return RebuildPause
}

// KeyPatterns returns Patterns with prefix (redis.key_prefix) in front.
func (s Spec) KeyPatterns(prefix string) []string {
	out := make([]string, len(s.Patterns))
	for i, p := range s.Patterns {
		out[i] = prefix + p
	}
	return out
}

// Owns reports whether key (prefix included) matches one of the
// projection's patterns.
func (s Spec) Owns(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return false
	}
	for _, p := range s.Patterns {
		if globMatch(p, rest) {
			return true
		}
	}
	return false
}

// globMatch matches s against pattern, whose only wildcard is `*` (any run
// of bytes, as in Redis's SCAN MATCH).
func globMatch(pattern, s string) bool {
	head, rest, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == s
	}
	if !strings.HasPrefix(s, head) {
		return false
	}
	s = s[len(head):]
	for i := 0; i <= len(s); i++ {
		if globMatch(rest, s[i:]) {
			return true
		}
	}
	return false
}
