package projections

import "projector/pkg/events"

// stats maintains the `st:` counters per user and overall, one key per granularity.
type stats struct {
	cfg                    StatsConfig
	keys                   Keys
	year, month, day, hour bool
}

func newStats(cfg StatsConfig, k Keys) stats {
	s := stats{cfg: cfg, keys: k}
	for _, g := range cfg.Granularities {
		switch g {
		case "year":
			s.year = true
		case "month":
			s.month = true
		case "day":
			s.day = true
		case "hour":
			s.hour = true
		}
	}
	return s
}

func (stats) Name() string { return "stats" }

// statNames are the stats, indexed as globalKeys.stats is.
var statNames = [...]string{"views", "clicks", "orders", "units", "revenue_cents"}

const (
	statViews = iota
	statClicks
	statOrders
	statUnits
	statRevenue
)

// Plan writes the user's counters, then the global ones.
func (p stats) Plan(in *Input, out []Write) []Write {
	ev := &in.Event
	var units, revenue int64
	if ev.Type == events.Order {
		units, revenue = ev.Units(), ev.RevenueCents()
	}
	for _, global := range []bool{false, true} {
		switch ev.Type {
		case events.View:
			out = p.count(in, statViews, 1, global, out)
		case events.Click:
			out = p.count(in, statClicks, 1, global, out)
		case events.Order:
			out = p.count(in, statOrders, 1, global, out)
			out = p.count(in, statUnits, units, global, out)
			out = p.count(in, statRevenue, revenue, global, out)
		}
	}
	return out
}

// count adds delta to the stat in every configured granularity, for the
// user or overall.
func (p stats) count(in *Input, stat int, delta int64, global bool, out []Write) []Write {
	if delta == 0 {
		return out
	}
	b := &in.Buckets
	buckets := [4]string{b.Year, b.Month, b.Day, b.Hour}
	on := [4]bool{p.year, p.month, p.day, p.hour}
	var keys [4]string
	switch {
	case !global:
		keys = p.keys.UserStats(in.Event.UserID, statNames[stat], buckets, on)
	case in.global != nil:
		keys = in.global.stats[stat]
	default:
		for gran, bucket := range buckets {
			if on[gran] {
				keys[gran] = p.keys.GlobalStat(statNames[stat], bucket)
			}
		}
	}
	expireAt := [4]int64{0, 0, b.DayEnd + ms(p.cfg.DayTTL), b.HourEnd + ms(p.cfg.HourTTL)}
	for gran := range keys {
		if on[gran] && in.alive(expireAt[gran]) {
			out = append(out, Write{Kind: IncrBy, Global: global, Key: keys[gran], Delta: delta, ExpireAt: expireAt[gran]})
		}
	}
	return out
}
