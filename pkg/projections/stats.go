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

func (p stats) Plan(in *Input, out []Write) []Write {
	ev := &in.Event
	switch ev.Type {
	case events.View:
		out = p.count(in, "views", 1, out)
	case events.Click:
		out = p.count(in, "clicks", 1, out)
	case events.Order:
		out = p.count(in, "orders", 1, out)
		out = p.count(in, "units", ev.Units(), out)
		out = p.count(in, "revenue_cents", ev.RevenueCents(), out)
	}
	return out
}

// count adds delta to the stat in every configured granularity, for the user and overall.
func (p stats) count(in *Input, stat string, delta int64, out []Write) []Write {
	if delta == 0 {
		return out
	}
	b := &in.Buckets
	if p.year {
		out = p.add(in, stat, b.Year, 0, delta, out)
	}
	if p.month {
		out = p.add(in, stat, b.Month, 0, delta, out)
	}
	if p.day {
		out = p.add(in, stat, b.Day, b.DayEnd+ms(p.cfg.DayTTL), delta, out)
	}
	if p.hour {
		out = p.add(in, stat, b.Hour, b.HourEnd+ms(p.cfg.HourTTL), delta, out)
	}
	return out
}

func (p stats) add(in *Input, stat, bucket string, expireAt, delta int64, out []Write) []Write {
	if !in.alive(expireAt) {
		return out
	}
	return append(out,
		Write{Kind: IncrBy, Key: p.keys.UserStat(in.Event.UserID, stat, bucket), Delta: delta, ExpireAt: expireAt},
		Write{Kind: IncrBy, Global: true, Key: p.keys.GlobalStat(stat, bucket), Delta: delta, ExpireAt: expireAt})
}
