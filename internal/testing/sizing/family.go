// Package sizing measures how much Redis memory projector's projections take:
// it applies a generated log through the real pipeline (projection planner and
// apply script) and sums MEMORY USAGE per key family, so that docs/operations.md's
// sizing figures (bytes per user, per day of traffic, per idempotency marker)
// are measured rather than estimated.
package sizing

import "strings"

// Class says what a key family grows with.
type Class uint8

// Classes of key families.
const (
	// PerUser families live in a user's hash slot ({u:<user>}).
	PerUser Class = iota + 1
	// Global families live in the global slot ({g}) and grow with days of
	// traffic or are bounded by a short retention.
	Global
	// Markers are the idempotency markers px:seen:{u:<user>}:<day>: one hash
	// field per event, kept idempotency.window after the event's day.
	Markers
	// Bookkeeping is the rest of px: in the global slot (meta, watermarks).
	Bookkeeping
)

// String names the class for reports.
func (c Class) String() string {
	switch c {
	case PerUser:
		return "per user"
	case Global:
		return "global"
	case Markers:
		return "markers"
	case Bookkeeping:
		return "bookkeeping"
	}
	return "other"
}

// Family returns the family of key (after removing prefix, redis.key_prefix):
// the part before the hash tag followed by the tag's kind, e.g. "lv:{u}" or
// "px:seen:{u}", and its class. Stats counters are split by the granularity
// of their bucket ("st:{u}:hour", "st:{g}:day"), since each has its own
// lifetime. Keys without a projector hash tag return ("other", 0).
func Family(key, prefix string) (string, Class) {
	key = strings.TrimPrefix(key, prefix)
	i := strings.Index(key, ":{")
	if i <= 0 || i+3 > len(key) {
		return "other", 0
	}
	kind, tag := key[:i], key[i+2]
	if kind == "st" {
		return statFamily(key, tag)
	}
	switch {
	case tag == 'u' && kind == "px:seen":
		return kind + ":{u}", Markers
	case tag == 'u':
		return kind + ":{u}", PerUser
	case tag == 'g' && strings.HasPrefix(kind, "px:"):
		return kind + ":{g}", Bookkeeping
	case tag == 'g':
		return kind + ":{g}", Global
	}
	return "other", 0
}

// granularities names stats buckets by the length of their label (2026,
// 2026-12, 2026-12-02, 2026-12-02T08).
var granularities = map[int]string{4: "year", 7: "month", 10: "day", 13: "hour"}

// statFamily returns the family of a stats counter st:{...}:<stat>:<bucket>.
func statFamily(key string, tag byte) (string, Class) {
	g, ok := granularities[len(key)-strings.LastIndexByte(key, ':')-1]
	switch {
	case !ok:
		return "other", 0
	case tag == 'u':
		return "st:{u}:" + g, PerUser
	case tag == 'g':
		return "st:{g}:" + g, Global
	}
	return "other", 0
}
