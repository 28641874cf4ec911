package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// On a standalone server the user writes go without Lua where they can: a
// command sent directly costs Redis less than one called from a script,
// which also pays for its arguments and the Lua around each redis.call
// (BENCHMARKS.md, the price of Lua). One transaction applies the
// groups of many users: a first round trip WATCHes every key it reads and
// reads the markers, the guards and what the sets' trims and expiries depend
// on; the second is one MULTI/EXEC holding each user's markers and writes,
// decided in Go exactly as apply.lua decides them. A user whose markers exist
// gets nothing written (as in the script), a watched key that changed in
// between makes EXEC write nothing and the round is read again, and a user
// whose writes the reads cannot decide (kinds other than IncrBy, ZAddMax and
// SetValue; a set read without an expiry; an older write that needs the
// set's newest member) goes to the script.

// isStandalone reports whether rdb talks to one server (not a Redis Cluster).
func isStandalone(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.Client)
	return ok
}

// multiAttempts bounds the transactions tried for the same users before
// they go to the script (a key of theirs kept changing under WATCH).
// txKeysDefault bounds the keys one transaction WATCHes: Redis 7.0 compares each
// key a WATCH adds with every key the connection watches already, so a
// transaction's WATCH costs the square of its keys (BENCHMARKS.md). A
// batch's transactions go txInFlight at once.
const (
	multiAttempts = 3
	txKeysDefault = 64
	txInFlight    = 4
)

// mUser is one user group on its way through a transaction.
type mUser struct {
	u      string
	g      []*item
	hashes []mHash
	sets   []mSet
	plain  []*projections.Write // IncrBy and SetValue writes
	// guardKeys are the distinct guards of its sets, guards their reads.
	guardKeys []string
	guards    map[string]*redis.StringCmd
	hits      []hit
	writes    int64
	// watched counts the keys its transaction WATCHes.
	watched int
	cmds    [][]any // the transaction's commands of this user
}

// mHash is one marker hash of a user: its records (indices into g), the
// latest expiry they ask for and the round-trip reads.
type mHash struct {
	key  string
	at   int64
	recs []int
	vals *redis.SliceCmd
	exp  *redis.Cmd
}

// mSet is the ZAddMax writes of one set of a user.
type mSet struct {
	key   string
	prof  profile
	pairs []*projections.Write
	exp   *redis.Cmd // PEXPIRETIME (with an expiry)
}

// multiRound applies what it can of the user groups of pending by
// transactions (see above), up to txInFlight at once on connections of
// their own, and returns the users left to the script and the users with
// records still to apply after their markers were found (next).
func (c *core) multiRound(ctx context.Context, groups map[string][]*item, pending []string, res *Result, gc *groupCoalescer) (scripted, next []string, err error) {
	cl, ok := c.rdb.(*redis.Client)
	if !ok {
		return pending, nil, nil
	}
	var txs [][]*mUser
	txKeys := max(c.txKeys, 1)
	keys := txKeys
	for _, u := range pending {
		mu, ok := newMUser(u, groups[u], gc.of(groups[u]))
		if !ok {
			scripted = append(scripted, u)
			continue
		}
		if keys+mu.watched > txKeys {
			txs, keys = append(txs, nil), 0
		}
		txs[len(txs)-1] = append(txs[len(txs)-1], mu)
		keys += mu.watched
	}
	done := make([]bool, len(txs))
	errs := make([]error, len(txs))
	var wg sync.WaitGroup
	slots := make(chan struct{}, txInFlight)
	for i, users := range txs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			done[i], errs[i] = runTxs(ctx, cl, users)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	for i, users := range txs {
		if done[i] {
			res.UserCalls++
		}
		for _, mu := range users {
			switch {
			case !done[i] || (mu.hits == nil && mu.cmds == nil):
				scripted = append(scripted, mu.u)
			case mu.hits != nil:
				next = settleHits(groups, mu.u, mu.hits, res, next)
			default:
				applied(mu.g, res)
				res.Writes += mu.writes
			}
		}
	}
	return scripted, next, nil
}

// runTxs runs the transaction of users until it went through (true), or
// leaves them to the script (false): EXEC wrote nothing multiAttempts
// times because a watched key changed, or once because a command was
// refused (OOM, ...), which the script's reply then names.
func runTxs(ctx context.Context, cl *redis.Client, users []*mUser) (bool, error) {
	for attempt := 1; ; attempt++ {
		err := cl.Watch(ctx, func(tx *redis.Tx) error { return runTx(ctx, tx, users) })
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, redis.TxFailedErr) && attempt < multiAttempts:
		case errors.Is(err, redis.TxFailedErr), redis.HasErrorPrefix(err, "EXECABORT"):
			return false, nil
		default:
			return false, err
		}
	}
}

// newMUser sorts the coalesced writes ws of user u's group g for a
// transaction; ok is false when they need the script.
func newMUser(u string, g []*item, ws []projections.Write) (*mUser, bool) {
	mu := &mUser{u: u, g: g}
	for i := range ws {
		w := &ws[i]
		if !txKind(w.Kind) {
			return nil, false
		}
		switch w.Kind {
		case projections.IncrBy, projections.SetValue:
			mu.plain = append(mu.plain, w)
		case projections.ZAddMax:
			p := profileOf(w)
			j := 0
			for j < len(mu.sets) && mu.sets[j].key != w.Key {
				j++
			}
			if j == len(mu.sets) {
				mu.sets = append(mu.sets, mSet{key: w.Key, prof: p})
			} else if mu.sets[j].prof != p {
				return nil, false // two profiles on one set: the second depends on the first
			}
			mu.sets[j].pairs = append(mu.sets[j].pairs, w)
		}
	}
	for j, it := range g {
		k := 0
		for k < len(mu.hashes) && mu.hashes[k].key != it.marker {
			k++
		}
		if k == len(mu.hashes) {
			mu.hashes = append(mu.hashes, mHash{key: it.marker})
		}
		h := &mu.hashes[k]
		h.recs = append(h.recs, j)
		h.at = max(h.at, it.markerExp)
	}
	for i := range mu.sets {
		if g := mu.sets[i].prof.guard; g != "" && !slices.Contains(mu.guardKeys, g) {
			mu.guardKeys = append(mu.guardKeys, g)
		}
	}
	mu.watched = len(mu.hashes) + len(mu.sets) + len(mu.guardKeys)
	return mu, true
}

// splitForTx cuts the group of each pending user before its first record
// that a transaction cannot apply (a removal, a guard, a registry entry:
// see txKind), so that the records before it go by transaction; a group
// that starts with such records keeps the run of them, for one script call.
// The records cut off are returned by user, for rejoin to hand to the next
// round: they run after the records before them, and a transaction again
// takes the records after a run (a batch of a few events per user, a few
// per cent of them removals, would otherwise send a third of its users to
// the script).
func splitForTx(groups map[string][]*item, pending []string) map[string][]*item {
	var later map[string][]*item
	for _, u := range pending {
		g := groups[u]
		k := 0
		for k < len(g) && txable(g[k]) {
			k++
		}
		if k == 0 {
			for k < len(g) && !txable(g[k]) {
				k++
			}
		}
		if k < len(g) {
			if later == nil {
				later = map[string][]*item{}
			}
			groups[u], later[u] = g[:k:k], g[k:]
		}
	}
	return later
}

// txable reports whether a transaction can apply every user write of it.
func txable(it *item) bool {
	for i := range it.user {
		if !txKind(it.user[i].Kind) {
			return false
		}
	}
	return true
}

// txKind reports whether a transaction applies writes of kind k: counters,
// values and sorted-set adds (the others read or remove what the
// transaction cannot read ahead).
func txKind(k projections.Kind) bool {
	switch k {
	case projections.IncrBy, projections.SetValue, projections.ZAddMax:
		return true
	}
	return false
}

// rejoin appends the records splitForTx held back (later) to what is left
// of their users' groups after a round (the users of next), in the order of
// the round's users, and returns the users of the next round.
func rejoin(groups, later map[string][]*item, round, next []string) []string {
	if len(later) == 0 {
		return next
	}
	left := make(map[string]bool, len(next))
	for _, u := range next {
		left[u] = true
	}
	for _, u := range round {
		rest, ok := later[u]
		if !ok {
			continue
		}
		if left[u] {
			groups[u] = append(groups[u][:len(groups[u]):len(groups[u])], rest...)
			continue
		}
		groups[u] = rest
		next = append(next, u)
	}
	return next
}

// runTx is one attempt: WATCH and the reads, then MULTI/EXEC of the users
// that found no marker and whose writes the reads decide.
func runTx(ctx context.Context, tx *redis.Tx, users []*mUser) error {
	var watch []any
	watch = append(watch, "watch")
	for _, mu := range users {
		mu.hits, mu.cmds, mu.writes = nil, nil, 0
		for i := range mu.hashes {
			watch = append(watch, &mu.hashes[i].key)
		}
		for i := range mu.sets {
			watch = append(watch, &mu.sets[i].key)
		}
		for i := range mu.guardKeys {
			watch = append(watch, &mu.guardKeys[i])
		}
	}
	var watched *redis.Cmd
	if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
		watched = p.Do(ctx, watch...)
		for _, mu := range users {
			queueReads(ctx, p, mu)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		_ = tx.Unwatch(ctx).Err()
		return fmt.Errorf("read markers and sets: %w", err)
	}
	if err := watched.Err(); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	write := false
	for _, mu := range users {
		ok, err := mu.decide()
		if err != nil {
			_ = tx.Unwatch(ctx).Err()
			return fmt.Errorf("user %q: %w", mu.u, err)
		}
		if !ok {
			mu.cmds = nil
		}
		write = write || mu.cmds != nil
	}
	if !write {
		return tx.Unwatch(ctx).Err()
	}
	cmds, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, mu := range users {
			for _, args := range mu.cmds {
				p.Do(ctx, args...)
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, redis.TxFailedErr) || redis.HasErrorPrefix(err, "EXECABORT") {
			return err
		}
		for _, cmd := range cmds {
			if cmd.Err() != nil {
				return fmt.Errorf("multi/exec, %s: %w", describeCmd(cmd.Args()), cmd.Err())
			}
		}
		return fmt.Errorf("multi/exec: %w", err)
	}
	return nil
}

// queueReads queues what mu's decisions depend on: its markers and their
// hashes' expiry, its guards and its sets' expiry. A set's members are not
// read: its rank trim goes with every add (a trim of a set within its size
// costs Redis less than reading whether a member was new).
func queueReads(ctx context.Context, p redis.Pipeliner, mu *mUser) {
	for i := range mu.hashes {
		h := &mu.hashes[i]
		ids := make([]string, len(h.recs))
		for j, r := range h.recs {
			ids[j] = mu.g[r].rec.Event.ID
		}
		h.vals = p.HMGet(ctx, h.key, ids...)
		h.exp = p.Do(ctx, "pexpiretime", &h.key)
	}
	mu.guards = nil
	if len(mu.guardKeys) > 0 {
		mu.guards = make(map[string]*redis.StringCmd, len(mu.guardKeys))
		for _, g := range mu.guardKeys {
			mu.guards[g] = p.Get(ctx, g)
		}
	}
	for i := range mu.sets {
		s := &mu.sets[i]
		s.exp = nil
		if s.prof.hasTTL {
			s.exp = p.Do(ctx, "pexpiretime", &s.key)
		}
	}
}

// decide turns mu's reads into hits (a marker exists: nothing written) or
// into its transaction commands; ok is false when the reads cannot decide.
func (mu *mUser) decide() (ok bool, err error) {
	for i := range mu.hashes {
		h := &mu.hashes[i]
		vals, err := h.vals.Result()
		if err != nil {
			return false, fmt.Errorf("read markers %s: %w", h.key, err)
		}
		for j, v := range vals {
			if s, isStr := v.(string); isStr {
				mu.hits = append(mu.hits, hit{at: h.recs[j], value: s})
			}
		}
	}
	if mu.hits != nil {
		return true, nil
	}
	for i := range mu.hashes {
		h := &mu.hashes[i]
		cur, err := h.exp.Int64()
		if err != nil {
			return false, fmt.Errorf("read expiry of %s: %w", h.key, err)
		}
		args := make([]any, 0, 2+2*len(h.recs))
		args = append(args, "hset", &h.key)
		for _, r := range h.recs {
			args = append(args, &mu.g[r].rec.Event.ID, &mu.g[r].origin)
		}
		mu.cmds = append(mu.cmds, args)
		if cur < 0 || h.at > cur {
			mu.cmds = append(mu.cmds, []any{"pexpireat", &h.key, &h.at})
		}
	}
	for _, w := range mu.plain {
		if w.Kind == projections.SetValue {
			if w.ExpireAt > 0 {
				mu.cmds = append(mu.cmds, []any{"set", &w.Key, &w.Value, "pxat", &w.ExpireAt})
			} else {
				mu.cmds = append(mu.cmds, []any{"set", &w.Key, &w.Value})
			}
			mu.writes++
			continue
		}
		mu.cmds = append(mu.cmds, []any{"incrby", &w.Key, &w.Delta})
		if w.ExpireAt != 0 {
			mu.cmds = append(mu.cmds, []any{"pexpireat", &w.Key, &w.ExpireAt, "nx"})
		}
		mu.writes++
	}
	for i := range mu.sets {
		gv, err := mu.guardValue(mu.sets[i].prof.guard)
		if err != nil {
			return false, err
		}
		ok, err := mu.sets[i].decide(gv, mu)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// guardValue returns the value of guard key g as read (-1: none).
func (mu *mUser) guardValue(g string) (int64, error) {
	if g == "" {
		return -1, nil
	}
	v, err := mu.guards[g].Result()
	if errors.Is(err, redis.Nil) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read guard %s: %w", g, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("guard %s holds %q: %w", g, v, err)
	}
	return n, nil
}

// decide appends to mu the commands of the set's writes above the guard
// value gv, as apply.lua's writeSet makes them; ok is false when they need
// the set's newest member (the script then applies them).
func (s *mSet) decide(gv int64, mu *mUser) (ok bool, err error) {
	add := []any{"zadd", &s.key, "gt"}
	var hi, lo int64
	for _, w := range s.pairs {
		if w.Score <= gv {
			continue
		}
		if len(add) == 3 {
			hi, lo = w.Score, w.Score
		}
		hi, lo = max(hi, w.Score), min(lo, w.Score)
		add = append(add, &w.Score, &w.Member)
	}
	if len(add) == 3 {
		return true, nil
	}
	mu.writes += int64(len(add)-3) / 2
	cmds := [][]any{add}
	p := s.prof
	if p.keep > 0 { // a read of the members would cost more than the trim
		cmds = append(cmds, []any{"zremrangebyrank", &s.key, 0, -(p.keep + 1)})
	}
	trim := []any{"zremrangebyscore", &s.key, "-inf", "(" + strconv.FormatInt(hi-p.ret, 10)}
	if !p.hasTTL {
		if p.ret > 0 {
			return false, nil // trimmed by its newest member
		}
		mu.cmds = append(mu.cmds, cmds...)
		return true, nil
	}
	cur, err := s.exp.Int64()
	if err != nil {
		return false, fmt.Errorf("read expiry of %s: %w", s.key, err)
	}
	at := hi + p.ttl
	switch {
	case cur == -1:
		return false, nil // a set without expiry: trimmed by its newest member
	case cur == -2: // a new set: every member is written here, hi is the newest
		cmds = append(cmds, []any{"pexpireat", &s.key, at})
		if p.ret > 0 && lo < hi-p.ret {
			cmds = append(cmds, trim)
		}
	case at > cur: // the expiry moves: hi is the newest
		cmds = append(cmds, []any{"pexpireat", &s.key, at})
		if p.ret > 0 {
			cmds = append(cmds, trim)
		}
	case p.ret > 0 && lo < cur-p.ttl-p.ret:
		return false, nil // an older write below the window: trimmed by the newest member
	}
	mu.cmds = append(mu.cmds, cmds...)
	return true, nil
}

// describeCmd names a command by its name and first key, for errors (its
// arguments may be pointers).
func describeCmd(args []any) string {
	out := make([]string, 0, 2)
	for _, a := range args[:min(2, len(args))] {
		switch v := a.(type) {
		case *string:
			out = append(out, *v)
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return strings.Join(out, " ")
}
