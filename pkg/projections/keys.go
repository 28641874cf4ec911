package projections

// Keys builds the Redis key names of docs/contract.md sections 4 and 9. Prefix (redis.key_prefix)
// goes in front of every key, never inside the hash-tag braces. Each
// projection's file adds the builders of its own keys; this file holds the
// shared layout and the bookkeeping keys.
type Keys struct {
	Prefix string
}

// User returns "<prefix><kind>:{u:<user>}".
func (k Keys) User(kind, user string) string {
	return k.Prefix + kind + ":{u:" + user + "}"
}

// Global returns "<prefix><kind>:{g}".
func (k Keys) Global(kind string) string {
	return k.Prefix + kind + ":{g}"
}

// Seen is `px:seen:{u:<user>}:<day>`, the hash of idempotency markers of a
// user's events of one day.
func (k Keys) Seen(user, day string) string { return k.Prefix + "px:seen:{u:" + user + "}:" + day }

// Watermarks is `px:wm:{g}`, the hash of per-partition offsets whose global
// effects are applied.
func (k Keys) Watermarks() string { return k.Global("px:wm") }

// NodeWatermarks is `px:nwm:{<tag>}`, the hash of per-partition offsets
// whose writes on one Redis Cluster master are complete: tag is chosen so
// that the key lives on that master ("g" on a standalone server).
func (k Keys) NodeWatermarks(tag string) string { return k.Prefix + "px:nwm:{" + tag + "}" }

// Meta is `px:meta:{g}`, the hash recording that projections exist.
func (k Keys) Meta() string { return k.Global("px:meta") }

// Lease is `px:lease:{g}`, the running replayer's lease.
func (k Keys) Lease() string { return k.Global("px:lease") }

// RebuildWatermarks is `px:rwm:{u:<user>}`, the hash of per-partition
// offsets up to which a replayer rebuilding projections next to running
// consumers applied the user's writes (so a resumed rebuild applies none twice).
func (k Keys) RebuildWatermarks(user string) string { return k.User("px:rwm", user) }
