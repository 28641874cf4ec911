package projections

import "time"

// Config selects and tunes the projections (docs/contract.md section 8, keys under
// `projections.`). The zero value enables nothing; Defaults returns the
// contract's defaults.
type Config struct {
	LastViewed   LastViewedConfig   `mapstructure:"last_viewed"`
	History      HistoryConfig      `mapstructure:"history"`
	Stats        StatsConfig        `mapstructure:"stats"`
	Bestsellers  RetentionConfig    `mapstructure:"bestsellers"`
	ProductViews RetentionConfig    `mapstructure:"product_views"`
	RecentOrders RecentOrdersConfig `mapstructure:"recent_orders"`
	Orders       OrdersConfig       `mapstructure:"orders"`
	Trending     RetentionConfig    `mapstructure:"trending"`
}

// LastViewedConfig tunes `lv:{u:<user>}`.
type LastViewedConfig struct {
	Enabled bool          `mapstructure:"enabled"`
	Size    int           `mapstructure:"size"` // newest members kept
	TTL     time.Duration `mapstructure:"ttl"`  // entry retention and key expiry after the newest ts
}

// HistoryConfig tunes `hist:{u:<user>}` and `histclr:{u:<user>}`.
type HistoryConfig struct {
	Enabled   bool          `mapstructure:"enabled"`
	Size      int           `mapstructure:"size"`      // newest entries kept
	Retention time.Duration `mapstructure:"retention"` // entry retention and key expiry after the newest ts
	Scope     []string      `mapstructure:"scope"`     // empty or [device, store]
}

// Scoped reports whether history keys are split by device and store.
func (h HistoryConfig) Scoped() bool { return len(h.Scope) > 0 }

// StatsConfig tunes the `st:` counters.
type StatsConfig struct {
	Enabled       bool          `mapstructure:"enabled"`
	Granularities []string      `mapstructure:"granularities"` // subset of year, month, day, hour
	DayTTL        time.Duration `mapstructure:"day_ttl"`       // day keys expire at day end + DayTTL
	HourTTL       time.Duration `mapstructure:"hour_ttl"`      // hour keys expire at hour end + HourTTL
}

// RetentionConfig tunes a projection whose keys live for Retention after their bucket ends.
type RetentionConfig struct {
	Enabled   bool          `mapstructure:"enabled"`
	Retention time.Duration `mapstructure:"retention"`
}

// RecentOrdersConfig tunes `recent:{g}`.
type RecentOrdersConfig struct {
	Enabled bool          `mapstructure:"enabled"`
	Keep    time.Duration `mapstructure:"keep"` // window kept behind the newest order ts
}

// OrdersConfig tunes `order:{u:<user>}:<id>` and `orders:{u:<user>}`.
type OrdersConfig struct {
	Enabled bool          `mapstructure:"enabled"`
	TTL     time.Duration `mapstructure:"ttl"`
}

// Day is 24 hours, the unit of the `30d` duration syntax.
const Day = 24 * time.Hour

// Defaults returns the contract's default configuration: every projection on.
func Defaults() Config {
	return Config{
		LastViewed:   LastViewedConfig{Enabled: true, Size: 10, TTL: 90 * Day},
		History:      HistoryConfig{Enabled: true, Size: 100, Retention: 30 * Day},
		Stats:        StatsConfig{Enabled: true, Granularities: []string{"year", "month", "day", "hour"}, DayTTL: 400 * Day, HourTTL: 8 * Day},
		Bestsellers:  RetentionConfig{Enabled: true, Retention: 8 * Day},
		ProductViews: RetentionConfig{Enabled: true, Retention: 8 * Day},
		RecentOrders: RecentOrdersConfig{Enabled: true, Keep: time.Hour},
		Orders:       OrdersConfig{Enabled: true, TTL: 90 * Day},
		Trending:     RetentionConfig{Enabled: true, Retention: 2 * time.Hour},
	}
}

// Names lists the projection names in the contract's order.
var Names = []string{"last_viewed", "history", "stats", "bestsellers", "product_views", "recent_orders", "orders", "trending"}
