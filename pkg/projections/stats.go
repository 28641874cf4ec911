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
	if p.year {
		out = p.add(in, stat, 0, b.Year, 0, delta, global, out)
	}
	if p.month {
		out = p.add(in, stat, 1, b.Month, 0, delta, global, out)
	}
	if p.day {
		out = p.add(in, stat, 2, b.Day, b.DayEnd+ms(p.cfg.DayTTL), delta, global, out)
	}
	if p.hour {
		out = p.add(in, stat, 3, b.Hour, b.HourEnd+ms(p.cfg.HourTTL), delta, global, out)
	}
	return out
}

// add writes one counter; gran indexes globalKeys.stats (bucket's granularity).
func (p stats) add(in *Input, stat, gran int, bucket string, expireAt, delta int64, global bool, out []Write) []Write {
	if !in.alive(expireAt) {
		return out
	}
	if !global {
		return append(out, Write{Kind: IncrBy, Key: p.keys.UserStat(in.Event.UserID, statNames[stat], bucket), Delta: delta, ExpireAt: expireAt})
	}
	var key string
	if in.global != nil {
		key = in.global.stats[stat][gran]
	} else {
		key = p.keys.GlobalStat(statNames[stat], bucket)
	}
	return append(out, Write{Kind: IncrBy, Global: true, Key: key, Delta: delta, ExpireAt: expireAt})
}
