package refmodel

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"projector/internal/gen"
)

// model applies events to a store as docs/contract.md section 4 describes.
type model struct {
	opts  Options
	loc   *time.Location
	st    *store
	seen  map[string]bool            // event ids applied
	hists map[string]map[string]bool // user -> history keys written so far
}

// Expected returns the Redis state after every valid record of log is
// processed at opts.Now: records flagged Poison are skipped, each distinct
// event id is applied once (its first occurrence), in log order. Keys under
// `<prefix>px:` are not modelled. Expected panics if a record not flagged
// Poison cannot be decoded (a generator bug).
func Expected(opts Options, log []gen.Record) State {
	m := &model{
		opts:  opts,
		loc:   opts.loc(),
		st:    &store{now: opts.nowMs(), keys: map[string]*entry{}},
		seen:  map[string]bool{},
		hists: map[string]map[string]bool{},
	}
	for _, r := range log {
		if r.Poison {
			continue
		}
		e, err := decode(r)
		if err != nil {
			panic(fmt.Sprintf("refmodel: %v", err))
		}
		if m.seen[e.ID] {
			continue
		}
		m.seen[e.ID] = true
		m.apply(e)
	}
	return m.st.state()
}

// DuplicatesOutsideWindow returns the ids of valid records that repeat an
// earlier id although their ts + opts.Window <= opts.Now: the contract guarantees to
// recognise duplicates only within the window after the event's ts, so a
// pipeline may apply these twice where Expected applies them once.
func DuplicatesOutsideWindow(opts Options, log []gen.Record) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range log {
		if r.Poison {
			continue
		}
		e, err := decode(r)
		if err != nil {
			panic(fmt.Sprintf("refmodel: %v", err))
		}
		if seen[e.ID] && e.TS+opts.Window.Milliseconds() <= opts.nowMs() {
			out = append(out, e.ID)
		}
		seen[e.ID] = true
	}
	return out
}

// key builds a key name: prefix, then the parts joined by ':'.
func (m *model) key(parts ...string) string {
	return m.opts.KeyPrefix + strings.Join(parts, ":")
}

// user returns the hash tag of a user's keys.
func user(id string) string { return "{u:" + id + "}" }

// global is the hash tag of global keys.
const global = "{g}"

// ms converts a duration to milliseconds.
func ms(d time.Duration) int64 { return d.Milliseconds() }

// apply applies one event to every enabled projection.
func (m *model) apply(e event) {
	switch e.Type {
	case "view":
		m.stats(e, "views", 1)
		m.productViews(e)
		m.trending(e)
		if !m.clearedBefore(e) {
			m.lastViewed(e)
			m.history(e)
		}
	case "click":
		m.stats(e, "clicks", 1)
	case "order":
		m.stats(e, "orders", 1)
		m.stats(e, "units", e.units())
		m.stats(e, "revenue_cents", e.revenue())
		m.bestsellers(e)
		m.recentOrders(e)
		m.orders(e)
	case "history_cleared":
		m.historyCleared(e)
	case "history_item_removed":
		m.historyItemRemoved(e)
	default:
		panic(fmt.Sprintf("refmodel: event %s has unknown type %q", e.ID, e.Type))
	}
}

// clearedBefore reports whether a view is at or before the user's
// history_cleared ts (histclr exists only with history enabled).
func (m *model) clearedBefore(e event) bool {
	if !m.opts.Projections.History.Enabled {
		return false
	}
	c, ok := m.st.keys[m.key("histclr", user(e.UserID))]
	return ok && e.TS <= c.num
}

// stats adds delta to one stat of the user and of everyone, per granularity.
func (m *model) stats(e event, stat string, delta int64) {
	cfg := m.opts.Projections.Stats
	if !cfg.Enabled {
		return
	}
	for _, g := range cfg.Granularities {
		var bucket string
		var expireAt int64
		switch g {
		case "year":
			bucket = label(e.TS, m.loc, yearLayout)
		case "month":
			bucket = label(e.TS, m.loc, monthLayout)
		case "day":
			bucket = label(e.TS, m.loc, dayLayout)
			expireAt = dayEnd(e.TS, m.loc) + ms(cfg.DayTTL)
		case "hour":
			bucket = label(e.TS, m.loc, hourLayout)
			expireAt = hourEnd(e.TS, m.loc) + ms(cfg.HourTTL)
		default:
			panic(fmt.Sprintf("refmodel: unknown granularity %q", g))
		}
		m.st.incrBy(m.key("st", user(e.UserID), stat, bucket), delta, expireAt)
		m.st.incrBy(m.key("st", global, stat, bucket), delta, expireAt)
	}
}

// productViews counts a view in the day's pv ranking.
func (m *model) productViews(e event) {
	cfg := m.opts.Projections.ProductViews
	if !cfg.Enabled {
		return
	}
	m.st.zincrBy(m.key("pv", global, label(e.TS, m.loc, dayLayout)), e.ProductID, 1, dayEnd(e.TS, m.loc)+ms(cfg.Retention))
}

// trending counts a view in the minute's trend ranking.
func (m *model) trending(e event) {
	cfg := m.opts.Projections.Trending
	if !cfg.Enabled {
		return
	}
	m.st.zincrBy(m.key("trend", global, label(e.TS, m.loc, minuteLayout)), e.ProductID, 1, minuteEnd(e.TS)+ms(cfg.Retention))
}

// bestsellers adds each order line's quantity to the day's ranking.
func (m *model) bestsellers(e event) {
	cfg := m.opts.Projections.Bestsellers
	if !cfg.Enabled {
		return
	}
	k := m.key("best", global, label(e.TS, m.loc, dayLayout))
	for _, it := range e.Items {
		m.st.zincrBy(k, it.ProductID, it.Quantity, dayEnd(e.TS, m.loc)+ms(cfg.Retention))
	}
}

// recentOrders adds the order to the sliding window of recent orders.
func (m *model) recentOrders(e event) {
	cfg := m.opts.Projections.RecentOrders
	if !cfg.Enabled {
		return
	}
	m.st.zaddWindowed(m.key("recent", global), e.ID, e.TS, window{keep: ms(cfg.Keep)})
}

// orders stores the order document and indexes it under the user.
func (m *model) orders(e event) {
	cfg := m.opts.Projections.Orders
	if !cfg.Enabled {
		return
	}
	doc, err := json.Marshal(orderJSON{ID: e.ID, UserID: e.UserID, TS: e.TS, Items: e.Items, TotalCents: e.revenue()})
	if err != nil {
		panic(fmt.Sprintf("refmodel: encode order %s: %v", e.ID, err)) // plain data: cannot fail
	}
	m.st.set(m.key("order", user(e.UserID), e.ID), string(doc), e.TS+ms(cfg.TTL))
	m.st.zaddWindowed(m.key("orders", user(e.UserID)), e.ID, e.TS, window{keep: ms(cfg.TTL)})
}
