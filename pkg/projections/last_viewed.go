package projections

import (
	"fmt"
	"time"

	"projector/pkg/events"
)

// lastViewedSpec declares `lv:{u:<user>}`.
var lastViewedSpec = Spec{
	Name:     "last_viewed",
	Scope:    ScopeUser,
	Patterns: []string{"lv:*"},
	// Views at or before the user's history clear (histclr, a history key)
	// are ignored while history is on.
	ReadsFrom: []string{"history"},
	section:   func(c *Config) section { return &c.LastViewed },
	defaults:  func(c *Config) { c.LastViewed = LastViewedConfig{Enabled: true, Size: 10, TTL: 90 * Day} },
	check: func(c *Config) *FieldError {
		if n := c.LastViewed.Size; n < 1 {
			return &FieldError{Field: "size", Problem: fmt.Sprintf("must be at least 1 (got %d)", n)}
		}
		return nil
	},
	build: func(c Config, k Keys) Projection {
		return lastViewed{cfg: c.LastViewed, keys: k, guarded: c.History.Enabled}
	},
}

// LastViewedConfig tunes `lv:{u:<user>}`.
type LastViewedConfig struct {
	Enabled bool          `mapstructure:"enabled"`
	Size    int           `mapstructure:"size"` // newest members kept
	TTL     time.Duration `mapstructure:"ttl"`  // entry retention and key expiry after the newest ts
}

func (c *LastViewedConfig) enabledFlag() *bool { return &c.Enabled }

// LastViewed is `lv:{u:<user>}`.
func (k Keys) LastViewed(user string) string { return k.Prefix + "lv:{u:" + user + "}" }

// lastViewed maintains `lv:{u:<user>}`: the newest Size products a user viewed.
type lastViewed struct {
	cfg     LastViewedConfig
	keys    Keys
	guarded bool // history is on: views at or before histclr are ignored
}

func (p lastViewed) Plan(in *Input, out []Write) []Write {
	ev := &in.Event
	key := p.keys.LastViewed(ev.UserID)
	switch ev.Type {
	case events.View:
		ttl := ms(p.cfg.TTL)
		if !in.alive(ev.TS + ttl) {
			return out
		}
		w := Write{Kind: ZAddMax, Key: key, Member: ev.ProductID, Score: ev.TS, ExpireAt: ev.TS + ttl,
			Trim: Trim{Keep: p.cfg.Size, RetentionMs: ttl}}
		if p.guarded {
			w.Guard = in.histClr(p.keys)
		}
		out = append(out, w)
	case events.HistoryCleared:
		out = append(out, Write{Kind: ZRemUpTo, Key: key, Score: ev.TS})
	case events.HistoryItemRemoved:
		out = append(out, Write{Kind: ZRemMemberUpTo, Key: key, Member: ev.ProductID, Score: ev.TS})
	}
	return out
}
