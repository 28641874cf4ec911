package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"projector/pkg/events"
)

// Ranking names a ranking that Rank locates products in. The names follow
// the read API's paths: /api/bestsellers/today is "bestsellers-today".
type Ranking string

// The rankings.
const (
	// RankingBestsellersToday is today's bestsellers (score = units).
	RankingBestsellersToday Ranking = "bestsellers-today"
	// RankingBestsellersWeek is the bestsellers of the last WeekDays days
	// (score = units*10 + days with sales).
	RankingBestsellersWeek Ranking = "bestsellers-week"
	// RankingMostViewedToday is today's most viewed products (score = views).
	RankingMostViewedToday Ranking = "most-viewed-today"
	// RankingTrending is the trending products (score = views of the last
	// TrendingMinutes minutes, weighted, rounded to 2 decimals).
	RankingTrending Ranking = "trending"
)

// Rankings lists every Ranking, in the dashboard's order.
func Rankings() []Ranking {
	return []Ranking{RankingBestsellersToday, RankingBestsellersWeek, RankingMostViewedToday, RankingTrending}
}

// ParseRanking returns the Ranking named s, or an *InputError about
// "ranking".
func ParseRanking(s string) (Ranking, error) {
	if s == "" {
		return "", badInput("ranking", "required (one of %s)", rankingList())
	}
	if !slices.Contains(Rankings(), Ranking(s)) {
		return "", badInput("ranking", "must be one of %s (got %q)", rankingList(), s)
	}
	return Ranking(s), nil
}

// rankingList is "bestsellers-today, bestsellers-week, ...".
func rankingList() string {
	names := make([]string, 0, len(Rankings()))
	for _, rk := range Rankings() {
		names = append(names, string(rk))
	}
	return strings.Join(names, ", ")
}

// MaxAround is the largest number of neighbours Rank lists on each side.
const MaxAround = 10

// ErrNotRanked wraps the error for a product that has no entry in the
// ranking read: the caller should answer 404.
var ErrNotRanked = errors.New("not ranked")

// RankResult is where a product stands in a ranking.
type RankResult struct {
	Ranking Ranking `json:"ranking"`
	// Ranked is the product's entry: its rank (from 1; equal scores are
	// ordered by member descending, as on the pages), its score, and units
	// and days for bestsellers-week.
	Ranked
	// Total is the number of entries of the ranking.
	Total int64 `json:"total"`
	// Around lists, when neighbours were asked for (around > 0), up to that
	// many entries above the product, the product itself and up to that
	// many below, in rank order; fewer at the top and the bottom.
	Around []Ranked `json:"around,omitempty"`
	// Snapshot names the snapshot read (as RankPage.Snapshot) and BuiltAt
	// its build time in Unix ms.
	Snapshot string `json:"snapshot"`
	BuiltAt  int64  `json:"built_at"`
}

// Rank returns product's rank and score in ranking, its number of entries
// and, with around in 1..MaxAround, the around entries above and below it.
// It reads the snapshot that cursor pages read (bestsellers-today and
// most-viewed-today; bestsellers-week and trending have no other), so a
// rank is the product's position on those pages, building the snapshot when
// none is current.
//
// Round trips: one MULTI reads the pointer snap:{g}:<name>, the rank
// and score (ZREVRANK ... WITHSCORE on Redis 7.2+ and Valkey; ZREVRANK and
// ZSCORE on Redis 7.0) and ZCARD, from the snapshot this Reader last read
// for ranking; the answer stands when the pointer still names it. Else
// (first call, a newer snapshot, or none current) the pointer is resolved
// and the read repeated. Neighbours take one more read (ZREVRANGE
// WITHSCORES). So once warm: one round trip, two with around > 0. Whether
// the server accepts WITHSCORE is found out once per Reader.
//
// Errors: *InputError for an unknown ranking, a product id breaking the id
// rule (docs/contract.md section 2) or around outside 0..MaxAround;
// ErrDisabled when the ranking's projection is switched off; ErrNotRanked
// when product has no entry.
func (r *Reader) Rank(ctx context.Context, ranking Ranking, product string, around int) (RankResult, error) {
	if _, err := ParseRanking(string(ranking)); err != nil {
		return RankResult{}, err
	}
	if err := events.CheckName("product", product); err != nil {
		var ve *events.ValidationError
		if errors.As(err, &ve) {
			return RankResult{}, badInput("product", "%s", ve.Rule)
		}
		return RankResult{}, badInput("product", "%s", err.Error())
	}
	if around < 0 || around > MaxAround {
		return RankResult{}, badInput("around", "must be in 0..%d (got %d)", MaxAround, around)
	}
	spec, finish, err := r.rankingSpec(ranking)
	if err != nil {
		return RankResult{}, err
	}
	withScore, err := r.zrevrankWithScore(ctx)
	if err != nil {
		return RankResult{}, err
	}
	s, pos, err := r.locate(ctx, ranking, spec, product, withScore)
	if err != nil {
		return RankResult{}, err
	}
	if !pos.found {
		return RankResult{}, fmt.Errorf("product %s: %w in %s", product, ErrNotRanked, ranking)
	}
	res := RankResult{Ranking: ranking, Ranked: Ranked{Rank: pos.rank + 1, ProductID: product, Score: pos.score},
		Total: pos.total, Snapshot: s.name + "@" + s.version, BuiltAt: s.builtMs}
	finish(&res.Ranked)
	if around == 0 {
		return res, nil
	}
	start := max(0, pos.rank-int64(around))
	var zs []redis.Z
	err = r.read(ctx, s.key, func(c redis.Cmdable, replica bool) error {
		var err error
		zs, err = c.ZRevRangeWithScores(ctx, s.key, start, pos.rank+int64(around)).Result()
		if err == nil && replica && len(zs) == 0 {
			return errNotReplicated
		}
		return err
	})
	if err != nil {
		return RankResult{}, fmt.Errorf("read the neighbours of %s in %s: %w", product, s.key, err)
	}
	res.Around = make([]Ranked, 0, len(zs))
	for i, z := range zs {
		it := Ranked{Rank: start + int64(i) + 1, ProductID: z.Member.(string), Score: z.Score}
		finish(&it)
		res.Around = append(res.Around, it)
	}
	return res, nil
}

// rankingSpec returns the snapshot of ranking (the one its cursor pages
// read) and what its pages do to each entry, or an error wrapping
// ErrDisabled.
func (r *Reader) rankingSpec(ranking Ranking) (snapSpec, func(*Ranked), error) {
	keep := func(*Ranked) {}
	switch ranking {
	case RankingBestsellersToday, RankingBestsellersWeek:
		if !r.cfg.Bestsellers.Enabled {
			return snapSpec{}, nil, disabled("bestsellers")
		}
		if ranking == RankingBestsellersWeek {
			return r.weekSpec(r.lastDays(WeekDays)), weekFields, nil
		}
		day := r.today()
		return copySpec("best1:"+day, r.keys.Bestsellers(day)), keep, nil
	case RankingMostViewedToday:
		if !r.cfg.ProductViews.Enabled {
			return snapSpec{}, nil, disabled("product_views")
		}
		day := r.today()
		return copySpec("pv1:"+day, r.keys.ProductViews(day)), keep, nil
	case RankingTrending:
		if !r.cfg.Trending.Enabled {
			return snapSpec{}, nil, disabled("trending")
		}
		return r.trendingSpec(), roundScore, nil
	}
	return snapSpec{}, nil, badInput("ranking", "must be one of %s (got %q)", rankingList(), string(ranking))
}

// rankState is what a Reader's Rank learns once and reuses: whether the
// server answers ZREVRANK ... WITHSCORE, and the snapshot each ranking last
// read (so the next call can read it and check the pointer in one MULTI).
type rankState struct {
	withScore atomic.Int32 // capUnknown, capYes or capNo
	mu        sync.Mutex
	last      map[Ranking]snapshot
}

// States of rankState.withScore.
const (
	capUnknown int32 = iota
	capYes
	capNo
)

// zrevrankWithScore reports whether the server accepts ZREVRANK ...
// WITHSCORE (Redis 7.2+, Valkey). It tries the command once, on a key of
// the snapshots' slot (so on Redis Cluster it asks the node that holds
// them): an answer means yes, an ERR reply (Redis 7.0: wrong number of
// arguments) no; both are kept for the Reader's life. Any other failure
// (Redis unreachable) is returned and the next call tries again.
func (r *Reader) zrevrankWithScore(ctx context.Context) (bool, error) {
	switch r.rank.withScore.Load() {
	case capYes:
		return true, nil
	case capNo:
		return false, nil
	}
	err := r.rdb.ZRevRankWithScore(ctx, r.snapPointer("probe"), "").Err()
	switch {
	case err == nil, errors.Is(err, redis.Nil):
		r.rank.withScore.Store(capYes)
		return true, nil
	case isErrReply(err):
		r.rank.withScore.Store(capNo)
		return false, nil
	}
	return false, fmt.Errorf("find out whether ZREVRANK takes WITHSCORE: %w", err)
}

// isErrReply reports an error reply of the generic ERR kind (not WRONGTYPE,
// LOADING, MOVED and the like).
func isErrReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "ERR ")
}

// lastSnap returns the snapshot ranking last read, if it is of spec name.
func (r *Reader) lastSnap(ranking Ranking, name string) (snapshot, bool) {
	r.rank.mu.Lock()
	defer r.rank.mu.Unlock()
	s, ok := r.rank.last[ranking]
	return s, ok && s.name == name
}

// setLastSnap records the snapshot ranking read.
func (r *Reader) setLastSnap(ranking Ranking, s snapshot) {
	r.rank.mu.Lock()
	defer r.rank.mu.Unlock()
	r.rank.last[ranking] = s
}

// rankPos is a product's place in a snapshot.
type rankPos struct {
	found bool
	rank  int64 // from 0
	score float64
	total int64
}

// locate returns the current snapshot of spec and product's place in it.
// It first reads the snapshot ranking last read together with the pointer,
// which is enough when the pointer still names that snapshot; otherwise it
// reads the snapshot the pointer names, or builds one when none is current
// (as a first cursor page does).
func (r *Reader) locate(ctx context.Context, ranking Ranking, spec snapSpec, product string, withScore bool) (snapshot, rankPos, error) {
	var s snapshot
	if last, ok := r.lastSnap(ranking, spec.name); ok {
		cur, pos, err := r.position(ctx, last, product, withScore)
		if err != nil || cur == last.version {
			return last, pos, err
		}
		if cur != "" {
			s = r.snapAt(spec.name, cur)
		}
	}
	if s.key == "" {
		var err error
		if s, err = r.current(ctx, spec); err != nil {
			return snapshot{}, rankPos{}, err
		}
	}
	r.setLastSnap(ranking, s)
	_, pos, err := r.position(ctx, s, product, withScore)
	return s, pos, err
}

// position reads, in one MULTI, the version the pointer of s's name
// currently names ("" when none is current) and product's place in s.
func (r *Reader) position(ctx context.Context, s snapshot, product string, withScore bool) (string, rankPos, error) {
	var ptr *redis.StringCmd
	var rankScore *redis.RankWithScoreCmd
	var rank, card *redis.IntCmd
	var score *redis.FloatCmd
	err := r.read(ctx, s.key, func(c redis.Cmdable, replica bool) error {
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			ptr = p.Get(ctx, r.snapPointer(s.name))
			if withScore {
				rankScore = p.ZRevRankWithScore(ctx, s.key, product)
			} else {
				rank = p.ZRevRank(ctx, s.key, product)
				score = p.ZScore(ctx, s.key, product)
			}
			card = p.ZCard(ctx, s.key)
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		for _, c := range cmds {
			if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
				return fmt.Errorf("%s: %w", c.Name(), e)
			}
		}
		if replica && card.Val() == 0 {
			return errNotReplicated
		}
		return nil
	})
	if err != nil {
		return "", rankPos{}, fmt.Errorf("read the rank of %s in %s: %w", product, s.key, err)
	}
	pos := rankPos{total: card.Val()}
	if withScore {
		pos.found = rankScore.Err() == nil
		pos.rank, pos.score = rankScore.Val().Rank, rankScore.Val().Score
	} else {
		pos.found = rank.Err() == nil && score.Err() == nil
		pos.rank, pos.score = rank.Val(), score.Val()
	}
	return ptr.Val(), pos, nil
}
