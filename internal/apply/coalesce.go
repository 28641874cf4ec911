package apply

import (
	"slices"

	"projector/pkg/projections"
)

// Coalesce merges the writes of one slot group without changing their effect:
// counter and sorted-set increments on the same key (and member) are summed
// into the first of them, ZAddMax writes of the same member and guard keep
// the highest score, but only between barriers (removals and SetMax), a
// SetValue that repeats the value its key was last set to and an SAdd that
// repeats a member are dropped. Order between barriers is otherwise kept.
func Coalesce(ws []projections.Write) []projections.Write {
	c := newCoalescer(len(ws))
	for i := range ws {
		c.add(&ws[i])
	}
	return c.out
}

// mergeKey is what a write merges by: its kind, key and member. Which of
// the writes of one key merge is add's rule.
type mergeKey struct {
	kind        projections.Kind
	key, member string
}

// keyOf returns w's merge key; ok is false for a write that merges with
// nothing (the barriers: removals and SetMax).
func keyOf(w *projections.Write) (k mergeKey, ok bool) {
	switch w.Kind {
	case projections.IncrBy, projections.SetValue:
		return mergeKey{kind: w.Kind, key: w.Key}, true
	case projections.ZIncrBy, projections.ZAddMax, projections.SAdd:
		return mergeKey{kind: w.Kind, key: w.Key, member: w.Member}, true
	}
	return mergeKey{}, false
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

// smallGroup is the size up to which a coalescer finds a write's earlier
// key by scanning instead of indexing it in a map: a user's writes in one
// batch are usually a dozen, and building a map for them costs more than
// the scan.
const smallGroup = 48

// coalescer is Coalesce one write at a time (a batch's global writes need
// not be copied into one slice first); reset reuses its memory for the next
// group.
type coalescer struct {
	out    []projections.Write
	keys   []mergeKey       // the key of each write of out (zero: merges with nothing)
	epochs []int32          // the barriers before each write of out
	at     map[mergeKey]int // indexed: the last position of each key in out
	// indexed finds keys by the map at, not by scanning keys: for groups of
	// more than smallGroup writes.
	indexed bool
	epoch   int32
}

// newCoalescer returns a coalescer for about n writes.
func newCoalescer(n int) *coalescer {
	c := &coalescer{out: make([]projections.Write, 0, n/2+1), keys: make([]mergeKey, 0, n/2+1), epochs: make([]int32, 0, n/2+1)}
	c.reset(n)
	return c
}

// reset empties c for a group of about n writes, keeping its memory.
func (c *coalescer) reset(n int) {
	c.out, c.keys, c.epochs, c.epoch = c.out[:0], c.keys[:0], c.epochs[:0], 0
	c.indexed = n > smallGroup
	switch {
	case !c.indexed:
	case c.at == nil:
		c.at = make(map[mergeKey]int, n/2)
	default:
		clear(c.at)
	}
}

// last returns the last position of k in out.
func (c *coalescer) last(k mergeKey) (int, bool) {
	if c.indexed {
		j, ok := c.at[k]
		return j, ok
	}
	for j := len(c.keys) - 1; j >= 0; j-- {
		if o := &c.keys[j]; o.kind == k.kind && o.key == k.key && o.member == k.member {
			return j, true
		}
	}
	return -1, false
}

// add merges w into the last write of its key, drops it, or appends it:
// increments always merge; a ZAddMax merges with one of the same guard
// after the same barriers (a removal or a guard's SetMax between them
// changes what the later one does); an SAdd of a member added before is
// dropped, and so is a SetValue that repeats the value its key was last set to.
func (c *coalescer) add(w *projections.Write) {
	if w.Kind.Barrier() {
		c.epoch++
	}
	k, ok := keyOf(w)
	if ok {
		if j, seen := c.last(k); seen {
			o := &c.out[j]
			switch w.Kind {
			case projections.IncrBy, projections.ZIncrBy:
				merge(o, w)
				return
			case projections.ZAddMax:
				if o.Guard == w.Guard && c.epochs[j] == c.epoch {
					merge(o, w)
					return
				}
			case projections.SAdd:
				return
			case projections.SetValue:
				if o.Value == w.Value {
					o.ExpireAt = max(o.ExpireAt, w.ExpireAt)
					return
				}
			}
		}
	}
	if ok && c.indexed {
		c.at[k] = len(c.out)
	}
	c.out, c.keys, c.epochs = append(c.out, *w), append(c.keys, k), append(c.epochs, c.epoch)
}

// groupCoalescer coalesces the user writes of one group after another into
// one growing slice: the writes of every group of a pipeline stay where they
// are until reset (the script arguments point into them).
type groupCoalescer struct {
	slab []projections.Write
	c    *coalescer
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
	if gc.c == nil {
		gc.c = newCoalescer(n)
	}
	gc.c.reset(n)
	for _, it := range g {
		for i := range it.user {
			gc.c.add(&it.user[i])
		}
	}
	start := len(gc.slab)
	gc.slab = append(gc.slab, gc.c.out...)
	return gc.slab[start:]
}
