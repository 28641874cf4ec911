package projections

import "projector/pkg/events"

// bestsellers maintains `best:{g}:<day>`: units ordered per product per day.
type bestsellers struct {
	cfg  RetentionConfig
	keys Keys
}

func (bestsellers) Name() string { return "bestsellers" }

func (p bestsellers) Plan(in *Input, out []Write) []Write {
	if in.Event.Type != events.Order {
		return out
	}
	exp := in.Buckets.DayEnd + ms(p.cfg.Retention)
	if !in.alive(exp) {
		return out
	}
	key := in.global.bestOr(p.keys, in.Buckets.Day)
	for _, it := range in.Event.Items {
		out = append(out, Write{Kind: ZIncrBy, Global: true, Key: key, Member: it.ProductID, Delta: it.Quantity, ExpireAt: exp})
	}
	return out
}

// productViews maintains `pv:{g}:<day>`: views per product per day.
type productViews struct {
	cfg  RetentionConfig
	keys Keys
}

func (productViews) Name() string { return "product_views" }

func (p productViews) Plan(in *Input, out []Write) []Write {
	if in.Event.Type != events.View {
		return out
	}
	exp := in.Buckets.DayEnd + ms(p.cfg.Retention)
	if !in.alive(exp) {
		return out
	}
	return append(out, Write{Kind: ZIncrBy, Global: true, Key: in.global.pvOr(p.keys, in.Buckets.Day), Member: in.Event.ProductID, Delta: 1, ExpireAt: exp})
}

// trending maintains `trend:{g}:<minute>`: views per product per minute.
type trending struct {
	cfg  RetentionConfig
	keys Keys
}

func (trending) Name() string { return "trending" }

func (p trending) Plan(in *Input, out []Write) []Write {
	if in.Event.Type != events.View {
		return out
	}
	exp := in.Buckets.MinuteEnd + ms(p.cfg.Retention)
	if !in.alive(exp) {
		return out
	}
	return append(out, Write{Kind: ZIncrBy, Global: true, Key: in.global.trendOr(p.keys, in.minute, in.Buckets.Minute), Member: in.Event.ProductID, Delta: 1, ExpireAt: exp})
}
