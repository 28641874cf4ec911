package projections

import "strings"

// Keys builds the Redis key names of docs/contract.md section 4. Prefix (redis.key_prefix)
// goes in front of every key, never inside the hash-tag braces.
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

// LastViewed is `lv:{u:<user>}`.
func (k Keys) LastViewed(user string) string { return k.Prefix + "lv:{u:" + user + "}" }

// History is `hist:{u:<user>}`, or `hist:{u:<user>}:<device>:<store>` when scoped.
func (k Keys) History(user, device, store string, scoped bool) string {
	if scoped {
		return k.Prefix + "hist:{u:" + user + "}:" + device + ":" + store
	}
	return k.Prefix + "hist:{u:" + user + "}"
}

// HistoryCleared is `histclr:{u:<user>}`.
func (k Keys) HistoryCleared(user string) string { return k.Prefix + "histclr:{u:" + user + "}" }

// HistoryRegistry is `px:hk:{u:<user>}`, the set of a user's scoped history keys.
func (k Keys) HistoryRegistry(user string) string { return k.User("px:hk", user) }

// UserStat is `st:{u:<user>}:<stat>:<bucket>`.
func (k Keys) UserStat(user, stat, bucket string) string {
	return k.Prefix + "st:{u:" + user + "}:" + stat + ":" + bucket
}

// UserStats returns UserStat(user, stat, buckets[g]) for each granularity g
// that is on (the others are empty), built in one allocation whose memory
// the keys share: four separate concatenations would cost a view four
// allocations, a quarter of its planning time.
func (k Keys) UserStats(user, stat string, buckets [4]string, on [4]bool) [4]string {
	parts := [...]string{k.Prefix, "st:{u:", user, "}:", stat, ":"}
	head := 0
	for _, part := range parts {
		head += len(part)
	}
	n := 0
	for g, bucket := range buckets {
		if on[g] {
			n += head + len(bucket)
		}
	}
	var sb strings.Builder
	sb.Grow(n)
	var ends [4]int
	for g, bucket := range buckets {
		if on[g] {
			for _, part := range parts {
				sb.WriteString(part)
			}
			sb.WriteString(bucket)
		}
		ends[g] = sb.Len()
	}
	all := sb.String()
	var keys [4]string
	start := 0
	for g := range buckets {
		if on[g] {
			keys[g] = all[start:ends[g]]
		}
		start = ends[g]
	}
	return keys
}

// GlobalStat is `st:{g}:<stat>:<bucket>`.
func (k Keys) GlobalStat(stat, bucket string) string {
	return k.Prefix + "st:{g}:" + stat + ":" + bucket
}

// Bestsellers is `best:{g}:<day>`.
func (k Keys) Bestsellers(day string) string { return k.Prefix + "best:{g}:" + day }

// ProductViews is `pv:{g}:<day>`.
func (k Keys) ProductViews(day string) string { return k.Prefix + "pv:{g}:" + day }

// RecentOrders is `recent:{g}`.
func (k Keys) RecentOrders() string { return k.Global("recent") }

// Order is `order:{u:<user>}:<id>`.
func (k Keys) Order(user, id string) string { return k.Prefix + "order:{u:" + user + "}:" + id }

// Orders is `orders:{u:<user>}`.
func (k Keys) Orders(user string) string { return k.User("orders", user) }

// Trending is `trend:{g}:<minute>`.
func (k Keys) Trending(minute string) string { return k.Prefix + "trend:{g}:" + minute }

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
