package api

import (
	"context"
	"errors"

	"projector/pkg/query"
)

// table lists the endpoints.
func (h *handler) table() []route {
	r := h.opts.Reader
	ranking := func(read func(context.Context, query.PageRequest) (query.RankPage, error)) func(context.Context, *params) (any, error) {
		return func(ctx context.Context, p *params) (any, error) {
			req := p.pageRequest()
			if p.err != nil {
				return nil, p.err
			}
			return read(ctx, req)
		}
	}
	paging := []string{"page", "size", "cursor"}
	return []route{
		{"/api/last-viewed", []string{"user"}, func(ctx context.Context, p *params) (any, error) {
			user := p.name("user", true)
			if p.err != nil {
				return nil, p.err
			}
			items, err := r.LastViewed(ctx, user)
			return map[string]any{"user": user, "items": items}, err
		}},
		{"/api/history", []string{"user", "page", "size", "device", "store"}, func(ctx context.Context, p *params) (any, error) {
			user, scope := p.name("user", true), query.Scope{Device: p.name("device", false), Store: p.name("store", false)}
			page, size := p.integer("page", 1, 1, query.MaxPage), p.integer("size", 20, 1, query.MaxPageSize)
			if p.err != nil {
				return nil, p.err
			}
			return r.History(ctx, user, scope, page, size)
		}},
		{"/api/stats", []string{"stat", "user", "from", "to", "granularity"}, func(ctx context.Context, p *params) (any, error) {
			q := query.StatsQuery{Stat: p.str("stat", ""), User: p.name("user", false), From: p.time("from", h.opts.Location),
				To: p.time("to", h.opts.Location), Granularity: p.str("granularity", "day")}
			if p.err != nil {
				return nil, p.err
			}
			return r.Stats(ctx, q)
		}},
		{"/api/bestsellers/today", paging, ranking(r.BestsellersToday)},
		{"/api/bestsellers/week", paging, ranking(r.BestsellersWeek)},
		{"/api/most-viewed/today", paging, ranking(r.MostViewedToday)},
		{"/api/trending", []string{"n"}, func(ctx context.Context, p *params) (any, error) {
			n := p.integer("n", 10, 1, query.MaxPageSize)
			if p.err != nil {
				return nil, p.err
			}
			return r.Trending(ctx, n)
		}},
		{"/api/rank", []string{"ranking", "product", "around"}, func(ctx context.Context, p *params) (any, error) {
			ranking, product, around := p.ranking("ranking"), p.name("product", true), p.integer("around", 0, 0, query.MaxAround)
			if p.err != nil {
				return nil, p.err
			}
			return r.Rank(ctx, ranking, product, around)
		}},
		{"/api/orders/recent", []string{"minutes", "limit"}, func(ctx context.Context, p *params) (any, error) {
			minutes, limit := p.integer("minutes", 5, 1, 1440), p.integer("limit", 20, 0, query.MaxPageSize)
			if p.err != nil {
				return nil, p.err
			}
			return r.RecentOrders(ctx, minutes, limit)
		}},
		{"/api/orders", []string{"user", "page", "size"}, func(ctx context.Context, p *params) (any, error) {
			user := p.name("user", true)
			page, size := p.integer("page", 1, 1, query.MaxPage), p.integer("size", 10, 1, query.MaxPageSize)
			if p.err != nil {
				return nil, p.err
			}
			return r.CustomerOrders(ctx, user, page, size)
		}},
		{"/api/overview", nil, func(ctx context.Context, _ *params) (any, error) { return h.overview(ctx) }},
		{"/api/status", nil, func(ctx context.Context, _ *params) (any, error) {
			if h.opts.Status == nil {
				return nil, errNoStatus
			}
			return h.opts.Status.Status(ctx)
		}},
		{"/api/", nil, func(context.Context, *params) (any, error) { return h.index(), nil }},
	}
}

// errNoStatus answers /api/status without a status monitor (404).
var errNoStatus = errors.New("consumer status is not available in this process")

// index lists the endpoints and their parameters.
func (h *handler) index() map[string][]string {
	out := map[string][]string{}
	for path, rt := range h.routes {
		out[path] = append([]string{}, rt.params...)
	}
	return out
}
