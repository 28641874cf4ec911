package refmodel

import "strings"

// lastViewed records a view in the user's last-viewed list.
func (m *model) lastViewed(e event) {
	cfg := m.opts.Projections.LastViewed
	if !cfg.Enabled {
		return
	}
	m.st.zaddWindowed(m.key("lv", user(e.UserID)), e.ProductID, e.TS, window{keep: ms(cfg.TTL), size: cfg.Size})
}

// history records a view as the entry `<product>@<day>` of the user's
// history key (scoped by device and store when configured).
func (m *model) history(e event) {
	cfg := m.opts.Projections.History
	if !cfg.Enabled {
		return
	}
	k := m.key("hist", user(e.UserID))
	if cfg.Scoped() {
		k = m.key("hist", user(e.UserID), e.Device, e.StoreID)
	}
	member := e.ProductID + "@" + label(e.TS, m.loc, dayLayout)
	m.st.zaddWindowed(k, member, e.TS, window{keep: ms(cfg.Retention), size: cfg.Size})
	if m.hists[e.UserID] == nil {
		m.hists[e.UserID] = map[string]bool{}
	}
	m.hists[e.UserID][k] = true
}

// historyCleared records the clear ts in histclr and removes every history
// entry and last-viewed member with score <= ts present now.
func (m *model) historyCleared(e event) {
	atOrBefore := func(_ string, score int64) bool { return score <= e.TS }
	if cfg := m.opts.Projections.History; cfg.Enabled {
		keep := max(ms(cfg.Retention), ms(m.opts.Projections.LastViewed.TTL))
		m.st.setMax(m.key("histclr", user(e.UserID)), e.TS, e.TS+keep)
		for k := range m.hists[e.UserID] {
			m.st.zremWhere(k, atOrBefore)
		}
	}
	if m.opts.Projections.LastViewed.Enabled {
		m.st.zremWhere(m.key("lv", user(e.UserID)), atOrBefore)
	}
}

// historyItemRemoved removes the product's history entries (every day, every
// scope) and its last-viewed member, each only if its score <= ts.
func (m *model) historyItemRemoved(e event) {
	if m.opts.Projections.History.Enabled {
		for k := range m.hists[e.UserID] {
			m.st.zremWhere(k, func(member string, score int64) bool {
				return score <= e.TS && productOf(member) == e.ProductID
			})
		}
	}
	if m.opts.Projections.LastViewed.Enabled {
		m.st.zremWhere(m.key("lv", user(e.UserID)), func(member string, score int64) bool {
			return score <= e.TS && member == e.ProductID
		})
	}
}

// productOf returns the product of a history member `<product>@<day>`: all
// before the last '@' (product ids may contain '@' themselves).
func productOf(member string) string {
	i := strings.LastIndexByte(member, '@')
	if i < 0 {
		return member
	}
	return member[:i]
}
