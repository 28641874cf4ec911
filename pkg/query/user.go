package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Viewed is one entry of a last-viewed list.
type Viewed struct {
	ProductID string `json:"product_id"`
	TS        int64  `json:"ts"`
}

// LastViewed returns the user's last viewed products, newest first, without
// dead entries (ts + projections.last_viewed.ttl <= now).
func (r *Reader) LastViewed(ctx context.Context, user string) ([]Viewed, error) {
	c := r.cfg.LastViewed
	if !c.Enabled {
		return nil, disabled("last_viewed")
	}
	key := r.keys.LastViewed(user)
	var zs []redis.Z
	err := r.read(ctx, key, func(rc redis.Cmdable, _ bool) error {
		var err error
		zs, err = rc.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, Start: "+inf", Stop: r.aliveFrom(c.TTL),
			ByScore: true, Rev: true, Count: int64(c.Size)}).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	out := make([]Viewed, 0, len(zs))
	for _, z := range zs {
		out = append(out, Viewed{ProductID: z.Member.(string), TS: int64(z.Score)})
	}
	return out, nil
}

// Scope selects a scoped history key (projections.history.scope).
type Scope struct {
	Device, Store string
}

// HistoryItem is one entry of a browsing history: a product viewed on a day.
type HistoryItem struct {
	ProductID string `json:"product_id"`
	Day       string `json:"day"`
	TS        int64  `json:"ts"`
}

// HistoryPage is one page of a browsing history, newest first.
type HistoryPage struct {
	Items []HistoryItem `json:"items"`
	Page  int           `json:"page"`
	Size  int           `json:"size"`
	// Total counts the live entries of the history.
	Total int64 `json:"total"`
}

// History returns page page (from 1) of size entries of the user's history.
// With projections.history.scope the scope is required (one history per
// device and store); without it the scope must be empty. Dead entries (ts +
// projections.history.retention <= now) are neither listed nor counted.
func (r *Reader) History(ctx context.Context, user string, scope Scope, page, size int) (HistoryPage, error) {
	c := r.cfg.History
	if !c.Enabled {
		return HistoryPage{}, disabled("history")
	}
	if err := checkPage(page, size); err != nil {
		return HistoryPage{}, err
	}
	scoped := c.Scoped()
	if scoped && (scope.Device == "" || scope.Store == "") {
		return HistoryPage{}, badInput("device", "history is kept per device and store (projections.history.scope): give device and store")
	}
	if !scoped && (scope.Device != "" || scope.Store != "") {
		return HistoryPage{}, badInput("device", "history is not scoped (projections.history.scope is empty): leave device and store out")
	}
	key := r.keys.History(user, scope.Device, scope.Store, scoped)
	total, zs, err := r.window(ctx, key, r.aliveFrom(c.Retention), int64((page-1)*size), int64(size))
	if err != nil {
		return HistoryPage{}, err
	}
	out := HistoryPage{Items: []HistoryItem{}, Page: page, Size: size, Total: total}
	for _, z := range zs {
		m := z.Member.(string)
		product, day := m, ""
		if i := strings.LastIndexByte(m, '@'); i >= 0 {
			product, day = m[:i], m[i+1:]
		}
		out.Items = append(out.Items, HistoryItem{ProductID: product, Day: day, TS: int64(z.Score)})
	}
	return out, nil
}
