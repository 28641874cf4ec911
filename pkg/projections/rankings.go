package projections

import (
	"time"

	"projector/pkg/events"
)

// bestsellersSpec declares `best:{g}:<day>`.
var bestsellersSpec = Spec{
	Name:     "bestsellers",
	Scope:    ScopeGlobal,
	Patterns: []string{"best:*"},
	section:  func(c *Config) section { return &c.Bestsellers },
	defaults: func(c *Config) { c.Bestsellers = RetentionConfig{Enabled: true, Retention: 8 * Day} },
	build:    func(c Config, k Keys) Projection { return bestsellers{cfg: c.Bestsellers, keys: k} },
}

// productViewsSpec declares `pv:{g}:<day>`.
var productViewsSpec = Spec{
	Name:     "product_views",
	Scope:    ScopeGlobal,
	Patterns: []string{"pv:*"},
	section:  func(c *Config) section { return &c.ProductViews },
	defaults: func(c *Config) { c.ProductViews = RetentionConfig{Enabled: true, Retention: 8 * Day} },
	build:    func(c Config, k Keys) Projection { return productViews{cfg: c.ProductViews, keys: k} },
}

// trendingSpec declares `trend:{g}:<minute>`.
var trendingSpec = Spec{
	Name:     "trending",
	Scope:    ScopeGlobal,
	Patterns: []string{"trend:*"},
	section:  func(c *Config) section { return &c.Trending },
	defaults: func(c *Config) { c.Trending = RetentionConfig{Enabled: true, Retention: 2 * time.Hour} },
	build:    func(c Config, k Keys) Projection { return trending{cfg: c.Trending, keys: k} },
}

// Bestsellers is `best:{g}:<day>`.
func (k Keys) Bestsellers(day string) string { return k.Prefix + "best:{g}:" + day }

// ProductViews is `pv:{g}:<day>`.
func (k Keys) ProductViews(day string) string { return k.Prefix + "pv:{g}:" + day }

// Trending is `trend:{g}:<minute>`.
func (k Keys) Trending(minute string) string { return k.Prefix + "trend:{g}:" + minute }

// bestsellers maintains `best:{g}:<day>`: units ordered per product per day.
type bestsellers struct {
	cfg  RetentionConfig
	keys Keys
}

// hourKeys is the day's key.
func (p bestsellers) hourKeys(h *hourBuckets) []string { return []string{p.keys.Bestsellers(h.b.Day)} }

func (p bestsellers) Plan(in *Input, out []Write) []Write {
	if in.Event.Type != events.Order {
		return out
	}
	exp := in.Buckets.DayEnd + ms(p.cfg.Retention)
	if !in.alive(exp) {
		return out
	}
	key := ""
	if hk := in.hourKeys(); hk != nil {
		key = hk[0]
	} else {
		key = p.keys.Bestsellers(in.Buckets.Day)
	}
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

// hourKeys is the day's key.
func (p productViews) hourKeys(h *hourBuckets) []string {
	return []string{p.keys.ProductViews(h.b.Day)}
}

func (p productViews) Plan(in *Input, out []Write) []Write {
	if in.Event.Type != events.View {
		return out
	}
	exp := in.Buckets.DayEnd + ms(p.cfg.Retention)
	if !in.alive(exp) {
		return out
	}
	key := ""
	if hk := in.hourKeys(); hk != nil {
		key = hk[0]
	} else {
		key = p.keys.ProductViews(in.Buckets.Day)
	}
	return append(out, Write{Kind: ZIncrBy, Global: true, Key: key, Member: in.Event.ProductID, Delta: 1, ExpireAt: exp})
}

// trending maintains `trend:{g}:<minute>`: views per product per minute.
type trending struct {
	cfg  RetentionConfig
	keys Keys
}

// hourKeys are the keys of the hour's 60 minutes.
func (p trending) hourKeys(h *hourBuckets) []string {
	keys := make([]string, len(h.minutes))
	for m, minute := range h.minutes {
		keys[m] = p.keys.Trending(minute)
	}
	return keys
}

func (p trending) Plan(in *Input, out []Write) []Write {
	if in.Event.Type != events.View {
		return out
	}
	exp := in.Buckets.MinuteEnd + ms(p.cfg.Retention)
	if !in.alive(exp) {
		return out
	}
	key := ""
	if hk := in.hourKeys(); hk != nil {
		key = hk[in.minute]
	} else {
		key = p.keys.Trending(in.Buckets.Minute)
	}
	return append(out, Write{Kind: ZIncrBy, Global: true, Key: key, Member: in.Event.ProductID, Delta: 1, ExpireAt: exp})
}
