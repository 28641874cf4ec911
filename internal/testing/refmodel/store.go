package refmodel

import (
	"sort"
	"strconv"
)

// entry is one key of the modelled Redis.
type entry struct {
	kind     string           // KindString or KindZSet
	text     string           // string value set with SET
	num      int64            // integer value of a counter or histclr key
	isNum    bool             // the string value is num
	members  map[string]int64 // sorted set members and scores
	newest   int64            // highest ts applied to a windowed sorted set
	expireAt int64            // Unix ms; 0 = no expiry
}

// store is the modelled Redis: keys that exist and have not expired.
type store struct {
	now  int64
	keys map[string]*entry
}

// expired reports whether a write with this EXPIREAT must be skipped.
func (s *store) expired(expireAt int64) bool {
	return expireAt != 0 && expireAt <= s.now
}

// laterExpiry moves e's expiry later, never earlier (0 = none stays none).
func laterExpiry(e *entry, expireAt int64) {
	if e.expireAt != 0 {
		e.expireAt = max(e.expireAt, expireAt)
	}
}

// get returns the key, creating it with kind and expiry when missing.
func (s *store) get(key, kind string, expireAt int64) *entry {
	e, ok := s.keys[key]
	if !ok {
		e = &entry{kind: kind, expireAt: expireAt}
		if kind == KindZSet {
			e.members = map[string]int64{}
		}
		s.keys[key] = e
	}
	if e.kind != kind {
		panic("refmodel: key " + key + " written as " + kind + " and " + e.kind)
	}
	laterExpiry(e, expireAt)
	return e
}

// incrBy adds delta to a counter key (INCRBY + EXPIREAT); a zero delta or an
// expired write does nothing.
func (s *store) incrBy(key string, delta, expireAt int64) {
	if delta == 0 || s.expired(expireAt) {
		return
	}
	e := s.get(key, KindString, expireAt)
	e.isNum = true
	e.num += delta
}

// setMax sets an integer string key to max(old, v) (histclr).
func (s *store) setMax(key string, v, expireAt int64) {
	if s.expired(expireAt) {
		return
	}
	_, existed := s.keys[key]
	e := s.get(key, KindString, expireAt)
	if !existed || v > e.num {
		e.num = v
	}
	e.isNum = true
}

// set writes a string key (SET + EXPIREAT).
func (s *store) set(key, text string, expireAt int64) {
	if s.expired(expireAt) {
		return
	}
	s.get(key, KindString, expireAt).text = text
}

// zincrBy adds delta to a member's score (ZINCRBY + EXPIREAT).
func (s *store) zincrBy(key, member string, delta, expireAt int64) {
	if delta == 0 || s.expired(expireAt) {
		return
	}
	s.get(key, KindZSet, expireAt).members[member] += delta
}

// window describes a sorted set whose members age out: entries older than
// newest - keep are removed, at most size are kept (0 = no cap) and the key
// expires at newest + keep.
type window struct {
	keep int64 // ms
	size int
}

// zaddWindowed adds member with score max(old, ts) to a windowed sorted set,
// then removes entries older than newest - keep and trims to the newest
// size. A member that would be dead at once (ts + keep <= now) is not written.
func (s *store) zaddWindowed(key, member string, ts int64, w window) {
	if s.expired(ts + w.keep) {
		return
	}
	e := s.get(key, KindZSet, ts+w.keep)
	if old, ok := e.members[member]; !ok || ts > old {
		e.members[member] = ts
	}
	e.newest = max(e.newest, ts)
	e.expireAt = e.newest + w.keep
	for m, score := range e.members {
		if score < e.newest-w.keep {
			delete(e.members, m)
		}
	}
	if w.size > 0 && len(e.members) > w.size {
		for _, m := range lowestFirst(e.members)[:len(e.members)-w.size] {
			delete(e.members, m)
		}
	}
	s.dropIfEmpty(key)
}

// zremWhere removes the members of key for which drop is true (ZREM); it
// changes neither newest nor expiry, and an emptied key is deleted.
func (s *store) zremWhere(key string, drop func(member string, score int64) bool) {
	e, ok := s.keys[key]
	if !ok || e.kind != KindZSet {
		return
	}
	for m, score := range e.members {
		if drop(m, score) {
			delete(e.members, m)
		}
	}
	s.dropIfEmpty(key)
}

// dropIfEmpty deletes an empty sorted set, as Redis does (with its expiry and
// newest ts: a later write starts afresh).
func (s *store) dropIfEmpty(key string) {
	if e := s.keys[key]; e != nil && e.kind == KindZSet && len(e.members) == 0 {
		delete(s.keys, key)
	}
}

// lowestFirst returns members in Redis rank order: ascending score, ties by
// ascending member bytes (ZREMRANGEBYRANK 0 n removes the first ones).
func lowestFirst(members map[string]int64) []string {
	ms := make([]string, 0, len(members))
	for m := range members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool {
		a, b := members[ms[i]], members[ms[j]]
		if a != b {
			return a < b
		}
		return ms[i] < ms[j]
	})
	return ms
}

// state converts the store into a State.
func (s *store) state() State {
	out := State{}
	for k, e := range s.keys {
		v := Value{Kind: e.kind, ExpireAtMs: e.expireAt}
		switch {
		case e.kind == KindZSet:
			v.ZSet = make(map[string]float64, len(e.members))
			for m, score := range e.members {
				v.ZSet[m] = float64(score)
			}
		case e.isNum:
			v.Str = strconv.FormatInt(e.num, 10)
		default:
			v.Str = e.text
		}
		out[k] = v
	}
	return out
}
