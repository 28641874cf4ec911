package wire

import (
	"slices"

	"projector/pkg/projections"
)

// profile is what the ZAddMax writes of a program share: the trim, the
// expiry's distance from the score (ttl; hasTTL false: no expiry) and the guard key.
type profile struct {
	keep   int
	ret    int64
	ttl    int64
	hasTTL bool
	guard  string
}

func profileOf(w *projections.Write) profile {
	return profile{keep: w.Trim.Keep, ret: w.Trim.RetentionMs, ttl: w.ExpireAt - w.Score, hasTTL: w.ExpireAt != 0, guard: w.Guard}
}

// profiles is the small list of a program's profiles (three at most in practice).
type profiles []profile

// index returns p's 1-based position, adding it when new.
func (ps *profiles) index(p profile) int {
	for i := range *ps {
		if (*ps)[i] == p {
			return i + 1
		}
	}
	*ps = append(*ps, p)
	return len(*ps)
}

// AppendWrites encodes writes as the script's write program (apply.lua reads
// it back): the ZAddMax profiles, then the counters (IncrBy writes: their keys
// are written by no other kind, so they may go first), then the other writes
// in order, each as its kind and the values that kind needs (ZAddMax and
// ZIncrBy writes grouped by key between barriers: appendSets, appendIncrs). Strings and
// numbers are passed as pointers into ws (go-redis writes *string and *int64
// without boxing them): ws must not change until the command has been sent.
func AppendWrites(args []any, ws []projections.Write) []any {
	var fixed [4]profile
	ps := profiles(fixed[:0])
	nc := 0
	for i := range ws {
		switch ws[i].Kind {
		case projections.ZAddMax:
			ps.index(profileOf(&ws[i]))
		case projections.IncrBy:
			nc++
		}
	}
	args = append(args, len(ps))
	for _, p := range ps {
		var ttl any = ""
		if p.hasTTL {
			ttl = p.ttl
		}
		args = append(args, p.keep, p.ret, ttl, p.guard)
	}
	args = append(args, nc)
	for i := range ws {
		if w := &ws[i]; w.Kind == projections.IncrBy {
			args = append(args, &w.Key, &w.Delta, &w.ExpireAt)
		}
	}
	seg := 0 // the first write after the last barrier
	for i := range ws {
		w := &ws[i]
		if w.Kind.Barrier() {
			args = appendIncrs(appendSets(args, ws[seg:i], ps), ws[seg:i])
			seg = i + 1
		}
		switch w.Kind {
		case projections.IncrBy, projections.ZAddMax, projections.ZIncrBy:
			continue
		}
		args = append(args, kindArg[w.Kind], &w.Key)
		switch w.Kind {
		case projections.SetValue:
			args = append(args, &w.Value, &w.ExpireAt)
		case projections.SetMax:
			args = append(args, &w.Score, &w.ExpireAt)
		case projections.ZRemUpTo:
			args = append(args, &w.Score, &w.Registry)
		case projections.ZRemMemberUpTo:
			args = append(args, &w.Member, &w.Score)
		case projections.ZRemPrefixUpTo:
			args = append(args, &w.Member, &w.Score, &w.Registry)
		case projections.SAdd:
			args = append(args, &w.Member, &w.ExpireAt)
		}
	}
	return appendIncrs(appendSets(args, ws[seg:], ps), ws[seg:])
}

// appendIncrs encodes the ZIncrBy writes of ws, a stretch without barriers,
// as one entry per key and expiry: key, expireAt, n, then n x (member,
// delta), in the order of each key's first write (no other kind writes
// those keys there, and increments commute). Two arguments per write
// instead of five: the script pays for each argument it reads (about a
// quarter of a microsecond), and a live batch's global call is mostly
// ZINCRBY writes, one per product and ranking.
func appendIncrs(args []any, ws []projections.Write) []any {
	var groups []incrGroup
	var index map[incrKey]int
	var of []int32 // the group of each ZIncrBy write, in order
	for i := range ws {
		w := &ws[i]
		if w.Kind != projections.ZIncrBy {
			continue
		}
		if index == nil {
			index = map[incrKey]int{}
		}
		k := incrKey{w.Key, w.ExpireAt}
		g, ok := index[k]
		if !ok {
			g = len(groups)
			index[k] = g
			groups = append(groups, incrGroup{w: w})
		}
		groups[g].n++
		of = append(of, int32(g))
	}
	if len(of) == 0 {
		return args
	}
	next := make([]int, len(groups)) // a counting sort of the writes by group
	total := 0
	for g := range groups {
		groups[g].first, next[g] = total, total
		total += groups[g].n
	}
	sorted := make([]*projections.Write, total)
	j := 0
	for i := range ws {
		if ws[i].Kind == projections.ZIncrBy {
			g := of[j]
			sorted[next[g]] = &ws[i]
			next[g]++
			j++
		}
	}
	for _, g := range groups {
		args = append(args, kindArg[projections.ZIncrBy], &g.w.Key, &g.w.ExpireAt, g.n)
		for _, w := range sorted[g.first : g.first+g.n] {
			args = append(args, &w.Member, &w.Delta)
		}
	}
	return args
}

// incrKey identifies the writes appendIncrs groups.
type incrKey struct {
	key string
	at  int64
}

// incrGroup is one entry of appendIncrs.
type incrGroup struct {
	w        *projections.Write // its first write
	n, first int                // its writes, at sorted[first:first+n]
}

// appendSets encodes the ZAddMax writes of ws, a stretch without barriers, as
// one entry per set and profile: key, profile, n, then n x (member, score),
// in the order of each set's first write. Within such a stretch they may go
// after the other writes: no other kind writes a set's key there, and the
// guard keys change only at barriers (SetMax).
func appendSets(args []any, ws []projections.Write, ps profiles) []any {
	type set struct {
		key  string
		prof int
	}
	var fixed [4]set
	done := fixed[:0]
	for i := range ws {
		w := &ws[i]
		if w.Kind != projections.ZAddMax {
			continue
		}
		s := set{w.Key, ps.index(profileOf(w))}
		if slices.Contains(done, s) {
			continue
		}
		done = append(done, s)
		n := 0
		for j := i; j < len(ws); j++ {
			if o := &ws[j]; o.Kind == projections.ZAddMax && o.Key == s.key && ps.index(profileOf(o)) == s.prof {
				n++
			}
		}
		args = append(args, kindArg[projections.ZAddMax], &w.Key, s.prof, n)
		for j := i; j < len(ws); j++ {
			if o := &ws[j]; o.Kind == projections.ZAddMax && o.Key == s.key && ps.index(profileOf(o)) == s.prof {
				args = append(args, &o.Member, &o.Score)
			}
		}
	}
	return args
}

// ArgCount bounds the number of script arguments AppendWrites makes of ws
// (counting four profiles; more only grow args).
func ArgCount(ws []projections.Write) int {
	n := 2 + 4*4
	for i := range ws {
		n += kindArgs[ws[i].Kind]
	}
	return n
}

// AppendMarkerRun begins a run of n markers of one marker hash and expiry
// (Unix ms): hash, expiry, n; each marker of the run follows by
// AppendMarker. The pointers are sent as they are: what they point to must
// not change until the command has been sent.
func AppendMarkerRun(args []any, hash *string, expireAt *int64, n int) []any {
	return append(args, hash, expireAt, n)
}

// AppendMarker encodes one marker of a run: the event id (the hash field)
// and the record's origin (its value).
func AppendMarker(args []any, id, origin *string) []any { return append(args, id, origin) }
