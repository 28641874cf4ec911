package apply

import "projector/pkg/projections"

type memberKey struct{ key, member string }

// Coalesce merges the writes of one slot group without changing their effect:
// counter and sorted-set increments on the same key (and member) are summed
// into the first of them, ZAddMax writes of the same member keep the highest
// score, but only between barriers (removals and SetMax), and identical SetValue
// and SAdd writes are kept once. Order between barriers is otherwise kept.
func Coalesce(ws []projections.Write) []projections.Write {
	out := make([]projections.Write, 0, len(ws))
	incr := map[string]int{}
	zincr := map[memberKey]int{}
	zadd := map[memberKey]int{}
	once := map[memberKey]bool{}
	for _, w := range ws {
		switch w.Kind {
		case projections.IncrBy:
			if j, ok := incr[w.Key]; ok {
				out[j].Delta += w.Delta
				out[j].ExpireAt = max(out[j].ExpireAt, w.ExpireAt)
				continue
			}
			incr[w.Key] = len(out)
		case projections.ZIncrBy:
			mk := memberKey{w.Key, w.Member}
			if j, ok := zincr[mk]; ok {
				out[j].Delta += w.Delta
				out[j].ExpireAt = max(out[j].ExpireAt, w.ExpireAt)
				continue
			}
			zincr[mk] = len(out)
		case projections.ZAddMax:
			mk := memberKey{w.Key, w.Member}
			if j, ok := zadd[mk]; ok && out[j].Guard == w.Guard {
				out[j].Score = max(out[j].Score, w.Score)
				out[j].ExpireAt = max(out[j].ExpireAt, w.ExpireAt)
				continue
			}
			zadd[mk] = len(out)
		case projections.SetValue, projections.SAdd:
			mk := memberKey{w.Key, w.Member + "\x00" + w.Value}
			if once[mk] {
				continue
			}
			once[mk] = true
		default:
			if w.Kind.Barrier() {
				clear(zadd)
			}
		}
		out = append(out, w)
	}
	return out
}
