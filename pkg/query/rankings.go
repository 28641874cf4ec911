package query

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Ranked is one entry of a ranking.
type Ranked struct {
	// Rank counts from 1.
	Rank      int64   `json:"rank"`
	ProductID string  `json:"product_id"`
	Score     float64 `json:"score"`
	// Units and Days are set for the 7-day bestsellers: units sold and
	// days with sales (the snapshot score is units*10 + days).
	Units int64 `json:"units,omitempty"`
	Days  int64 `json:"days,omitempty"`
}

// PageRequest selects a page of a ranking: by rank (Page from 1), or by
// cursor when Cursor is true (Token empty for the first page).
type PageRequest struct {
	Page   int
	Size   int
	Cursor bool
	Token  string
}

// RankPage is one page of a ranking.
type RankPage struct {
	Items []Ranked `json:"items"`
	// Total is the number of entries of the ranking.
	Total int64 `json:"total"`
	Page  int   `json:"page,omitempty"`
	Size  int   `json:"size"`
	// Next is the cursor of the next page (cursor paging; empty at the end).
	Next string `json:"next,omitempty"`
	// Snapshot names the snapshot read ("" for a live key) and BuiltAt its
	// build time in Unix ms.
	Snapshot string `json:"snapshot,omitempty"`
	BuiltAt  int64  `json:"built_at,omitempty"`
}

// page reads a page of the ranking: from the live key by rank, or from a
// snapshot of spec (when snap is set or the request pages by cursor).
func (r *Reader) page(ctx context.Context, live string, spec snapSpec, snap bool, req PageRequest) (RankPage, error) {
	if req.Size < 1 || req.Size > MaxPageSize {
		return RankPage{}, badInput("size", "must be in 1..%d (got %d)", MaxPageSize, req.Size)
	}
	if !req.Cursor {
		if err := checkPage(req.Page, req.Size); err != nil {
			return RankPage{}, err
		}
		if !snap {
			return r.rankPage(ctx, live, false, int64(req.Page-1)*int64(req.Size), req.Size)
		}
		s, err := r.current(ctx, spec)
		if err != nil {
			return RankPage{}, err
		}
		p, err := r.rankPage(ctx, s.key, true, int64(req.Page-1)*int64(req.Size), req.Size)
		p.Snapshot, p.BuiltAt = s.name+"@"+s.version, s.builtMs
		return p, err
	}
	var s snapshot
	start := int64(0)
	if req.Token == "" {
		var err error
		if s, err = r.current(ctx, spec); err != nil {
			return RankPage{}, err
		}
	} else {
		c, err := DecodeCursor(req.Token)
		if err != nil {
			return RankPage{}, err
		}
		if kindOf(c.Name) != kindOf(spec.name) {
			return RankPage{}, badInput("cursor", "belongs to another ranking (%s)", kindOf(c.Name))
		}
		s = r.snapAt(c.Name, c.Version)
		if start, err = r.after(ctx, s, c); err != nil {
			return RankPage{}, err
		}
	}
	p, err := r.rankPage(ctx, s.key, true, start, req.Size)
	if err != nil {
		return RankPage{}, err
	}
	p.Page, p.Snapshot, p.BuiltAt = 0, s.name+"@"+s.version, s.builtMs
	if n := len(p.Items); n == req.Size && p.Items[n-1].Rank < p.Total {
		last := p.Items[n-1]
		p.Next = Cursor{Name: s.name, Version: s.version, Score: last.Score, Member: last.ProductID}.Encode()
	}
	return p, nil
}

// kindOf is the ranking kind of a snapshot name ("best7" of "best7:2026-12-02").
func kindOf(name string) string { return strings.SplitN(name, ":", 2)[0] }

// after returns the 0-based rank that follows cursor c in snapshot s. The
// snapshot never changes, so the entry (c.Score, c.Member) is still at its
// rank and the entries after it are exactly those with a lower score or an
// equal score and a lower member: no entry is repeated or skipped, whatever
// was written to the live keys meanwhile.
func (r *Reader) after(ctx context.Context, s snapshot, c Cursor) (int64, error) {
	var exists *redis.IntCmd
	var rank *redis.IntCmd
	var score *redis.FloatCmd
	err := r.read(ctx, s.key, func(rc redis.Cmdable, replica bool) error {
		_, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
			exists = p.Exists(ctx, s.key)
			rank = p.ZRevRank(ctx, s.key, c.Member)
			score = p.ZScore(ctx, s.key, c.Member)
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if replica && exists.Val() == 0 {
			return errNotReplicated
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read cursor position in %s: %w", s.key, err)
	}
	if exists.Val() == 0 {
		return 0, ErrCursorExpired
	}
	if rank.Err() != nil || score.Val() != c.Score {
		return 0, badInput("cursor", "does not point into snapshot %s@%s", s.name, s.version)
	}
	return rank.Val() + 1, nil
}

// rankPage reads size entries of the ZSET key from 0-based rank start,
// highest score first, with the ZSET's size. A snapshot (snap) that a
// replica does not hold is read on the master.
func (r *Reader) rankPage(ctx context.Context, key string, snap bool, start int64, size int) (RankPage, error) {
	var card *redis.IntCmd
	var rng *redis.ZSliceCmd
	if err := r.read(ctx, key, func(c redis.Cmdable, replica bool) error {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			card = p.ZCard(ctx, key)
			rng = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, Start: start, Stop: start + int64(size) - 1, Rev: true})
			return nil
		})
		if err == nil && snap && replica && card.Val() == 0 {
			return errNotReplicated
		}
		return err
	}); err != nil {
		return RankPage{}, fmt.Errorf("read %s: %w", key, err)
	}
	p := RankPage{Items: make([]Ranked, 0, len(rng.Val())), Total: card.Val(), Page: int(start)/size + 1, Size: size}
	for i, z := range rng.Val() {
		p.Items = append(p.Items, Ranked{Rank: start + int64(i) + 1, ProductID: z.Member.(string), Score: z.Score})
	}
	return p, nil
}
