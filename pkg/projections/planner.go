// Package projections turns events into the Redis writes they imply (docs/contract.md
// section 4). Each projection is a pure function of the event, its
// configuration and the current time; nothing here does I/O. The applier
// (internal/apply) groups, coalesces and applies the writes.
//
// Each projection is declared once, by a Spec in its own file (name, scope,
// key patterns, configuration section, checks, planner), listed in the
// registry (config.go). The planner, the configuration checks, the
// replayer's wipe patterns, rebuild modes and selection derive from it;
// docs/adding-a-projection.md lists the steps.
package projections

import (
	"fmt"
	"time"

	"projector/pkg/events"
)

// Input is what a projection sees of one event: the event, its calendar
// buckets, and the current time (for skipping writes that would already have
// expired).
type Input struct {
	Event   events.Event
	Buckets Buckets
	NowMs   int64
	hour    *hourBuckets // the cached hour (nil: build every key)
	slot    int32        // the planning projection's index in hour.keys
	minute  int32        // the minute's index in the hour
	histclr string       // the user's histclr key, once built
}

// histClr returns the event user's histclr key.
func (in *Input) histClr(k Keys) string {
	if in.histclr == "" {
		in.histclr = k.HistoryCleared(in.Event.UserID)
	}
	return in.histclr
}

// hourKeys returns the planning projection's keys of the cached hour (see
// hourKeyer), or nil when the hour is not cached.
func (in *Input) hourKeys() []string {
	if in.hour == nil {
		return nil
	}
	return in.hour.keys[in.slot]
}

// alive reports whether a key expiring at expireAt (0: never) is still alive.
func (in *Input) alive(expireAt int64) bool {
	return expireAt == 0 || expireAt > in.NowMs
}

// Projection is one read model: a pure function from an event to writes.
// Its Spec (registry.go) names it and builds it from the configuration.
type Projection interface {
	// Plan appends the writes implied by in.Event to out and returns it.
	Plan(in *Input, out []Write) []Write
}

// Planner applies the enabled projections, in the contract's order, to events. It is
// safe for concurrent use.
type Planner struct {
	loc     *time.Location
	enabled []string     // names of the enabled projections, in the contract's order
	order   []Projection // in plan order: per-user writes first
	names   []string     // the names of order
	hours   hourCache    // the buckets and hour keys of recently planned hours
}

// NewPlanner builds the enabled projections of the registry.
func NewPlanner(cfg Config, loc *time.Location, prefix string) (*Planner, error) {
	if loc == nil {
		return nil, fmt.Errorf("projections: nil time zone")
	}
	k := Keys{Prefix: prefix}
	p := &Planner{loc: loc, enabled: EnabledNames(cfg)}
	// Plan order: the projections writing only user keys, then the others
	// (stats plans its user writes before its global ones), so that an
	// event's user writes come before its global writes (the applier splits
	// them without copying). Projections never write each other's keys, so
	// their order is free.
	for _, userOnly := range []bool{true, false} {
		for _, s := range registry {
			if s.Enabled(cfg) && (s.Scope == ScopeUser) == userOnly {
				p.order = append(p.order, s.build(cfg, k))
				p.names = append(p.names, s.Name)
			}
		}
	}
	return p, nil
}

// Enabled returns the names of the enabled projections.
func (p *Planner) Enabled() []string { return append([]string(nil), p.enabled...) }

// Plan appends every write ev implies to out, the per-user writes (Global
// false) before the global ones. now is the processing time: writes whose key
// would already have expired are left out.
func (p *Planner) Plan(ev events.Event, now time.Time, out []Write) []Write {
	in := Input{Event: ev, NowMs: now.UnixMilli()}
	in.Buckets, in.hour, in.minute = p.buckets(ev.TS)
	for j, pr := range p.order {
		in.slot = int32(j)
		n := len(out)
		out = pr.Plan(&in, out)
		for i := n; i < len(out); i++ {
			out[i].Projection = p.names[j]
		}
	}
	return out
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
