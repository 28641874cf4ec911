// Package apply applies the writes that projections plan to Redis, exactly
// once. How, step by step (markers, watermarks, the user and the global
// step), is docs/design/exactly-once.md. The files follow the steps of a
// batch, each using only those before it: the records, outcomes and options
// every step shares (apply.go); grouping and coalescing (coalesce.go);
// planning a batch (plan.go); the user step (user.go); the global step
// (global.go); each Redis Cluster master's own watermarks and what Redis
// holds as applied (masters.go, evidence.go); the seal (seal.go); the
// consumer's Applier (applier.go) and its batch in two halves for the
// replayer (commit.go); Meta, what the consumers ask of Redis beside batches
// (meta.go). The protocol to Redis, with the apply script that holds every
// write rule, is the package wire; the replayer's appliers beside running
// consumers are the package rebuild.
package apply

import (
	"time"

	"projector/internal/offsets"
)

// Record is one valid event and where it came from (see internal/records).
type Record = offsets.Record

// Range is the span of offsets of one partition that a batch covers (see internal/records).
type Range = offsets.Range

// Outcome is what became of one record.
type Outcome uint8

// Result reports what Apply did.
type Result struct {
	// Outcomes has one entry per input record.
	Outcomes []Outcome
	// Writes counts the writes the scripts reported as applied.
	Writes int64
	// UserCalls and GlobalCalls count script calls.
	UserCalls, GlobalCalls int
}

// Options are what every applier needs.
type Options struct {
	// Window is how long after an event's time duplicates are recognised.
	Window time.Duration
	// Location is the time zone of the calendar buckets.
	Location *time.Location
	// KeyPrefix is redis.key_prefix.
	KeyPrefix string
	// Now is the clock.
	Now func() time.Time
	// UsersPerCall is how many user groups one script call may apply
	// (0: usersPerCallStandalone on a standalone server; always 1 on Redis
	// Cluster, where a call's keys share a slot).
	UsersPerCall int
}

// Outcomes of a record.
const (
	// Applied: its effects are in Redis (now, or by an earlier delivery of the same record).
	Applied Outcome = iota + 1
	// Duplicate: another record with the same event id was applied before.
	Duplicate
	// Skipped: its partition's watermark says the whole record was applied before.
	Skipped
)
