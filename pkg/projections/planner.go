// Package projections turns events into the Redis writes they imply (docs/contract.md
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
	global  *globalKeys // the hour's global keys (nil: build them)
	minute  int         // the minute's index in the hour of global
	histclr string      // the user's histclr key, once built
}

// histClr returns the event user's histclr key.
func (in *Input) histClr(k Keys) string {
	if in.histclr == "" {
		in.histclr = k.HistoryCleared(in.Event.UserID)
	}
	return in.histclr
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

// Planner applies the enabled projections, in the contract's order, to events. It is
// safe for concurrent use.
type Planner struct {
	loc         *time.Location
	keys        Keys
	projections []Projection // in the contract's order
	order       []Projection // in plan order: per-user writes first
	names       []string     // Name() of order
	hours       hourCache    // the buckets and global keys of recently planned hours
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
	p := &Planner{loc: loc, keys: k, projections: ps}
	// Plan order: the projections writing only user keys, then stats (its user
	// writes before its global ones), then the global ones, so that an event's
	// user writes come before its global writes (the applier splits them without
	// copying). Projections never write each other's keys, so their order is free.
	for _, userOnly := range []bool{true, false} {
		for _, pr := range ps {
			switch pr.(type) {
			case lastViewed, history, orders:
				if !userOnly {
					continue
				}
			default:
				if userOnly {
					continue
				}
			}
			p.order = append(p.order, pr)
			p.names = append(p.names, pr.Name())
		}
	}
	return p, nil
}

// Enabled returns the names of the enabled projections.
func (p *Planner) Enabled() []string {
	names := make([]string, len(p.projections))
	for i, pr := range p.projections {
		names[i] = pr.Name()
	}
	return names
}

// Plan appends every write ev implies to out, the per-user writes (Global
// false) before the global ones. now is the processing time: writes whose key
// would already have expired are left out.
func (p *Planner) Plan(ev events.Event, now time.Time, out []Write) []Write {
	in := Input{Event: ev, NowMs: now.UnixMilli()}
	in.Buckets, in.global, in.minute = p.buckets(ev.TS)
	for j, pr := range p.order {
		n := len(out)
		out = pr.Plan(&in, out)
		for i := n; i < len(out); i++ {
			out[i].Projection = p.names[j]
		}
	}
	return out
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
