package projections

import (
	"fmt"
	"slices"
	"time"

	"projector/pkg/events"
)

// historySpec declares `hist:{u:<user>}` (or one per device and store, listed
// in `px:hk:{u:<user>}`) and `histclr:{u:<user>}`.
var historySpec = Spec{
	Name:     "history",
	Scope:    ScopeUser,
	Patterns: []string{"hist:*", "histclr:*", "px:hk:*"},
	section:  func(c *Config) section { return &c.History },
	defaults: func(c *Config) { c.History = HistoryConfig{Enabled: true, Size: 100, Retention: 30 * Day} },
	check:    checkHistory,
	build: func(c Config, k Keys) Projection {
		return history{cfg: c.History, keys: k, clearTTL: max(c.History.Retention, c.LastViewed.TTL)}
	},
}

// checkHistory checks the size and the scope, and puts the scope in key order.
func checkHistory(c *Config) *FieldError {
	h := &c.History
	if h.Size < 1 {
		return &FieldError{Field: "size", Problem: fmt.Sprintf("must be at least 1 (got %d)", h.Size)}
	}
	if sc := h.Scope; len(sc) > 0 {
		if len(sc) != 2 || !slices.Contains(sc, "device") || !slices.Contains(sc, "store") {
			return &FieldError{Field: "scope", Problem: fmt.Sprintf("must be empty or [device, store] (got %q)", sc)}
		}
		h.Scope = []string{"device", "store"} // the key order: hist:{u:<user>}:<device>:<store_id>
	}
	return nil
}

// HistoryConfig tunes `hist:{u:<user>}` and `histclr:{u:<user>}`.
type HistoryConfig struct {
	Enabled   bool          `mapstructure:"enabled"`
	Size      int           `mapstructure:"size"`      // newest entries kept
	Retention time.Duration `mapstructure:"retention"` // entry retention and key expiry after the newest ts
	Scope     []string      `mapstructure:"scope"`     // empty or [device, store]
}

func (c *HistoryConfig) enabledFlag() *bool { return &c.Enabled }

// Scoped reports whether history keys are split by device and store.
func (h HistoryConfig) Scoped() bool { return len(h.Scope) > 0 }

// History is `hist:{u:<user>}`, or `hist:{u:<user>}:<device>:<store>` when scoped.
func (k Keys) History(user, device, store string, scoped bool) string {
	if scoped {
		return k.Prefix + "hist:{u:" + user + "}:" + device + ":" + store
	}
	return k.Prefix + "hist:{u:" + user + "}"
}

// HistoryCleared is `histclr:{u:<user>}`.
func (k Keys) HistoryCleared(user string) string { return k.Prefix + "histclr:{u:" + user + "}" }

// HistoryRegistry is `px:hk:{u:<user>}`, the set of a user's scoped history keys.
func (k Keys) HistoryRegistry(user string) string { return k.User("px:hk", user) }

// history maintains `hist:{u:<user>}` (optionally per device and store) with one
// entry per product per day, and `histclr:{u:<user>}`, the latest clear.
type history struct {
	cfg      HistoryConfig
	keys     Keys
	clearTTL time.Duration // the longer of the history and last-viewed retentions
}

func (p history) Plan(in *Input, out []Write) []Write {
	ev := &in.Event
	scoped := p.cfg.Scoped()
	var registry string
	if scoped {
		registry = p.keys.HistoryRegistry(ev.UserID)
	}
	switch ev.Type {
	case events.View:
		ret := ms(p.cfg.Retention)
		if !in.alive(ev.TS + ret) {
			return out
		}
		key := p.keys.History(ev.UserID, ev.Device, ev.StoreID, scoped)
		if scoped {
			out = append(out, Write{Kind: SAdd, Key: registry, Member: key, ExpireAt: ev.TS + ret})
		}
		out = append(out, Write{Kind: ZAddMax, Key: key, Member: ev.ProductID + "@" + in.Buckets.Day,
			Score: ev.TS, ExpireAt: ev.TS + ret, Trim: Trim{Keep: p.cfg.Size, RetentionMs: ret},
			Guard: in.histClr(p.keys)})
	case events.HistoryCleared:
		if exp := ev.TS + ms(p.clearTTL); in.alive(exp) {
			out = append(out, Write{Kind: SetMax, Key: p.keys.HistoryCleared(ev.UserID), Score: ev.TS, ExpireAt: exp})
		}
		out = append(out, Write{Kind: ZRemUpTo, Key: p.keys.History(ev.UserID, "", "", false), Registry: registry, Score: ev.TS})
	case events.HistoryItemRemoved:
		out = append(out, Write{Kind: ZRemPrefixUpTo, Key: p.keys.History(ev.UserID, "", "", false), Registry: registry,
			Member: ev.ProductID + "@", Score: ev.TS})
	}
	return out
}
