// Package projections turns events into the Redis writes they imply (SPEC
// section 4). Each projection is a pure function of the event, its
// configuration and the current time; nothing here does I/O. The applier
// (internal/apply) groups, coalesces and applies the writes.
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
}

// alive reports whether a key expiring at expireAt (0: never) is still alive.
func (in *Input) alive(expireAt int64) bool {
	return expireAt == 0 || expireAt > in.NowMs
}

// Projection is one read model: a pure function from an event to writes.
type Projection interface {
	// Name is the configuration name (e.g. "last_viewed").
	Name() string
	// Plan appends the writes implied by in.Event to out and returns it.
	Plan(in *Input, out []Write) []Write
}

// Planner applies the enabled projections, in SPEC order, to events. It is
// safe for concurrent use.
type Planner struct {
	loc         *time.Location
	projections []Projection
	hours       hourCache // the buckets of recently planned hours
}

// NewPlanner builds the registry of enabled projections.
func NewPlanner(cfg Config, loc *time.Location, prefix string) (*Planner, error) {
	if loc == nil {
		return nil, fmt.Errorf("projections: nil time zone")
	}
	k := Keys{Prefix: prefix}
	var ps []Projection
	if cfg.LastViewed.Enabled {
		ps = append(ps, lastViewed{cfg: cfg.LastViewed, keys: k, guarded: cfg.History.Enabled})
	}
	if cfg.History.Enabled {
		ps = append(ps, history{cfg: cfg.History, keys: k, clearTTL: max(cfg.History.Retention, cfg.LastViewed.TTL)})
	}
	if cfg.Stats.Enabled {
		ps = append(ps, newStats(cfg.Stats, k))
	}
	if cfg.Bestsellers.Enabled {
		ps = append(ps, bestsellers{cfg: cfg.Bestsellers, keys: k})
	}
	if cfg.ProductViews.Enabled {
		ps = append(ps, productViews{cfg: cfg.ProductViews, keys: k})
	}
	if cfg.RecentOrders.Enabled {
		ps = append(ps, recentOrders{cfg: cfg.RecentOrders, keys: k})
	}
	if cfg.Orders.Enabled {
		ps = append(ps, orders{cfg: cfg.Orders, keys: k})
	}
	if cfg.Trending.Enabled {
		ps = append(ps, trending{cfg: cfg.Trending, keys: k})
	}
	return &Planner{loc: loc, projections: ps}, nil
}

// Enabled returns the names of the enabled projections.
func (p *Planner) Enabled() []string {
	names := make([]string, len(p.projections))
	for i, pr := range p.projections {
		names[i] = pr.Name()
	}
	return names
}

// Plan appends every write ev implies to out. now is the processing time:
// writes whose key would already have expired are left out.
func (p *Planner) Plan(ev events.Event, now time.Time, out []Write) []Write {
	in := Input{Event: ev, Buckets: p.buckets(ev.TS), NowMs: now.UnixMilli()}
	for _, pr := range p.projections {
		n := len(out)
		out = pr.Plan(&in, out)
		for i := n; i < len(out); i++ {
			out[i].Projection = pr.Name()
		}
	}
	return out
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
