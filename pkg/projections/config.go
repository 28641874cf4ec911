package projections

import "time"

// Config selects and tunes the projections (docs/contract.md section 8, keys under
// `projections.`): one section per projection of the registry, in its
// order, the mapstructure tag being the projection's name. The zero value
// enables nothing; Defaults returns the contract's defaults.
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

// registry lists every projection's Spec (declared in the projection's own
// file), in the contract's order (docs/contract.md section 4): the order of
// the sections of Config.
var registry = [...]*Spec{&lastViewedSpec, &historySpec, &statsSpec, &bestsellersSpec,
	&productViewsSpec, &recentOrdersSpec, &ordersSpec, &trendingSpec}

// RetentionConfig tunes a projection whose keys live for Retention after their bucket ends.
type RetentionConfig struct {
	Enabled   bool          `mapstructure:"enabled"`
	Retention time.Duration `mapstructure:"retention"`
}

func (c *RetentionConfig) enabledFlag() *bool { return &c.Enabled }

// Day is 24 hours, the unit of the `30d` duration syntax.
const Day = 24 * time.Hour

// Defaults returns the contract's default configuration: every projection on.
func Defaults() Config {
	var c Config
	for _, s := range registry {
		s.defaults(&c)
	}
	return c
}
