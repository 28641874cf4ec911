// Package refmodel is an independent reference model of projector's Redis
// read models (docs/contract.md section 4): Expected computes, from a generated log, the
// Redis state that processing each distinct event once must leave behind, and
// Compare diffs that state against a live Redis.
//
// The model is written from the contract alone and favours readability over
// speed: it keeps every key in a map, applies one event at a time in log
// order and re-sorts sorted sets on every trim. All times are Unix
// milliseconds.
package refmodel

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"projector/pkg/projections"
)

// Options describes the deployment whose state is modelled.
type Options struct {
	// Projections selects and tunes the projections (docs/contract.md section 8).
	Projections projections.Config
	// Location is the time_zone of calendar buckets; nil means UTC.
	Location *time.Location
	// KeyPrefix is redis.key_prefix, put in front of every key.
	KeyPrefix string
	// Window is idempotency.window. Expected applies every event id once
	// regardless; DuplicatesOutsideWindow lists the duplicates the contract does not
	// guarantee to recognise.
	Window time.Duration
	// Now is the time of processing: writes whose EXPIREAT is <= Now are
	// skipped and sorted-set entries whose ts + retention is <= Now are dead.
	// The zero time means nothing has expired.
	Now time.Time
	// Settle, when after Now, is the end of the period in which the pipeline
	// ran: Diff then ignores keys that expire (on either side) before Settle,
	// and treats entries dead at Settle as dead, because the pipeline and
	// Redis's own clock may legitimately have dropped them during that period.
	Settle time.Time
}

// nowMs returns Now in Unix ms (the minimum int64 when Now is zero).
func (o Options) nowMs() int64 {
	if o.Now.IsZero() {
		return -1 << 63
	}
	return o.Now.UnixMilli()
}

// loc returns the bucket time zone.
func (o Options) loc() *time.Location {
	if o.Location == nil {
		return time.UTC
	}
	return o.Location
}

// Kinds of Value.
const (
	KindString = "string"
	KindZSet   = "zset"
)

// Value is the content of one Redis key.
type Value struct {
	// Kind is "string" or "zset" (or, in a Dump, whatever TYPE said).
	Kind string
	// Str is the value of a string key.
	Str string
	// ZSet maps member to score for a sorted set.
	ZSet map[string]float64
	// ExpireAtMs is the key's expiry in Unix ms; 0 means no expiry.
	ExpireAtMs int64
}

// State maps full Redis key names (prefix included) to their content.
type State map[string]Value

// Format renders s one key per line, sorted, members by descending score
// (for debugging and failure messages).
func (s State) Format() string {
	var b strings.Builder
	for _, k := range sortedKeys(s) {
		v := s[k]
		fmt.Fprintf(&b, "%s %s exp=%s", k, v.Kind, formatExpiry(v.ExpireAtMs))
		switch v.Kind {
		case KindString:
			fmt.Fprintf(&b, " %q", v.Str)
		case KindZSet:
			for _, m := range rankDesc(v.ZSet) {
				fmt.Fprintf(&b, " %s=%.0f", m, v.ZSet[m])
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// formatExpiry renders an expiry in ms as RFC 3339 UTC (or "none").
func formatExpiry(ms int64) string {
	if ms == 0 {
		return "none"
	}
	return fmt.Sprintf("%d(%s)", ms, time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"))
}

// sortedKeys returns the keys of s in byte order.
func sortedKeys[V any](s map[string]V) []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// rankDesc returns the members of z from the highest Redis rank down: by
// descending score, ties by descending member bytes.
func rankDesc(z map[string]float64) []string {
	ms := sortedKeys(z)
	sort.SliceStable(ms, func(i, j int) bool {
		if z[ms[i]] != z[ms[j]] {
			return z[ms[i]] > z[ms[j]]
		}
		return ms[i] > ms[j]
	})
	return ms
}
