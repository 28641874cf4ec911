package apply

import (
	"slices"

	"projector/pkg/projections"
)

type memberKey struct{ key, member string }

// smallGroup is the size up to which Coalesce compares writes pairwise
// instead of indexing them in maps: a user's writes in one batch are usually
// a dozen, and building maps for them costs more than scanning.
const smallGroup = 48

// Coalesce merges the writes of one slot group without changing their effect:
// counter and sorted-set increments on the same key (and member) are summed
// into the first of them, ZAddMax writes of the same member keep the highest
// score, but only between barriers (removals and SetMax), and identical SetValue
// and SAdd writes are kept once. Order between barriers is otherwise kept.
func Coalesce(ws []projections.Write) []projections.Write {
	if len(ws) <= smallGroup {
		return coalesceSmall(ws)
	}
	return coalesceIndexed(ws)
}

// merge folds w into the earlier write dst it coalesces with.
func merge(dst *projections.Write, w *projections.Write) {
	switch w.Kind {
	case projections.IncrBy, projections.ZIncrBy:
		dst.Delta += w.Delta
	case projections.ZAddMax:
		dst.Score = max(dst.Score, w.Score)
	}
	dst.ExpireAt = max(dst.ExpireAt, w.ExpireAt)
}

// coalesceIndexed is Coalesce with maps from keys to positions in the output.
func coalesceIndexed(ws []projections.Write) []projections.Write {
	c := newCoalescer(len(ws))
	for i := range ws {
		c.add(&ws[i])
	}
	return c.out
}

// coalescer is Coalesce one write at a time, indexed by maps (for large
// groups, such as a batch's global writes, which need not be copied into one
// slice first).
type coalescer struct {
	out   []projections.Write
	incr  map[string]int
	zincr map[memberKey]int
	zadd  map[memberKey]int
	once  map[memberKey]bool
}

// newCoalescer returns a coalescer for about n writes.
func newCoalescer(n int) *coalescer {
	return &coalescer{out: make([]projections.Write, 0, n/2+1), incr: make(map[string]int, n/4),
		zincr: make(map[memberKey]int, n/4), zadd: map[memberKey]int{}, once: map[memberKey]bool{}}
}

// reset empties c for the next group, keeping its memory.
func (c *coalescer) reset() {
	c.out = c.out[:0]
	clear(c.incr)
	clear(c.zincr)
	clear(c.zadd)
	clear(c.once)
}

// add merges w into the writes so far, or appends it.
func (c *coalescer) add(w *projections.Write) {
	switch w.Kind {
	case projections.IncrBy:
		if j, ok := c.incr[w.Key]; ok {
			merge(&c.out[j], w)
			return
		}
		c.incr[w.Key] = len(c.out)
	case projections.ZIncrBy:
		mk := memberKey{w.Key, w.Member}
		if j, ok := c.zincr[mk]; ok {
			merge(&c.out[j], w)
			return
		}
		c.zincr[mk] = len(c.out)
	case projections.ZAddMax:
		mk := memberKey{w.Key, w.Member}
		if j, ok := c.zadd[mk]; ok && c.out[j].Guard == w.Guard {
			merge(&c.out[j], w)
			return
		}
		c.zadd[mk] = len(c.out)
	case projections.SetValue, projections.SAdd:
		mk := memberKey{w.Key, w.Member + "\x00" + w.Value}
		if c.once[mk] {
			return
		}
		c.once[mk] = true
	default:
		if w.Kind.Barrier() {
			clear(c.zadd)
		}
	}
	c.out = append(c.out, *w)
}

// coalesceSmall is Coalesce by pairwise comparison, for small groups.
func coalesceSmall(ws []projections.Write) []projections.Write {
	return appendCoalesced(make([]projections.Write, 0, len(ws)), ws)
}

// appendCoalesced is coalesceSmall appending to out.
func appendCoalesced(out, ws []projections.Write) []projections.Write {
	base := len(out)
	fence := base // ZAddMax writes merge only with writes from here on (after the last barrier)
	for i := range ws {
		w := &ws[i]
		j := -1
		switch w.Kind {
		case projections.IncrBy, projections.ZIncrBy:
			for k := base; k < len(out); k++ {
				if o := &out[k]; o.Kind == w.Kind && o.Key == w.Key && (w.Kind == projections.IncrBy || o.Member == w.Member) {
					j = k
					break
				}
			}
		case projections.ZAddMax:
			for k := len(out) - 1; k >= fence; k-- {
				if o := &out[k]; o.Kind == projections.ZAddMax && o.Key == w.Key && o.Member == w.Member {
					if o.Guard == w.Guard {
						j = k
					}
					break
				}
			}
		case projections.SetValue, projections.SAdd:
			dup := false
			for k := base; k < len(out); k++ {
				o := &out[k]
				if (o.Kind == projections.SetValue || o.Kind == projections.SAdd) && o.Key == w.Key && o.Member == w.Member && o.Value == w.Value {
					dup = true
					break
				}
			}
			if dup {
				continue
			}
		default:
			if w.Kind.Barrier() {
				fence = len(out) + 1
			}
		}
		if j >= 0 {
			merge(&out[j], w)
			continue
		}
		out = append(out, *w)
	}
	return out
}

// groupCoalescer coalesces the user writes of one group after another into
// one growing slice: the writes of every group of a pipeline stay where they
// are until reset (the script arguments point into them).
type groupCoalescer struct {
	flat, slab []projections.Write
	big        *coalescer
}

// reset forgets the writes of the groups so far (their pipeline was sent).
func (gc *groupCoalescer) reset() { gc.slab = gc.slab[:0] }

// reserve makes room in the slab for the coalesced writes of the groups of
// users (at most their planned writes), so that it does not grow by copying.
func (gc *groupCoalescer) reserve(groups map[string][]*Item, users []string) {
	n := 0
	for _, u := range users {
		if g := groups[u]; len(g) > 1 {
			for _, it := range g {
				n += len(it.user)
			}
		}
	}
	gc.slab = slices.Grow(gc.slab, n)
}

// of returns Coalesce of the user writes of g's records in order; the result
// stays valid until reset. One record's writes need no coalescing (they never
// repeat a key and member) and are returned as they are.
func (gc *groupCoalescer) of(g []*Item) []projections.Write {
	if len(g) == 1 {
		return g[0].user
	}
	n := 0
	for _, it := range g {
		n += len(it.user)
	}
	start := len(gc.slab)
	if n <= smallGroup {
		gc.flat = gc.flat[:0]
		for _, it := range g {
			gc.flat = append(gc.flat, it.user...)
		}
		gc.slab = appendCoalesced(gc.slab, gc.flat)
		return gc.slab[start:]
	}
	if gc.big == nil {
		gc.big = newCoalescer(n)
	}
	gc.big.reset()
	for _, it := range g {
		for i := range it.user {
			gc.big.add(&it.user[i])
		}
	}
	gc.slab = append(gc.slab, gc.big.out...)
	return gc.slab[start:]
}
