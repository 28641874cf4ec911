package rebuild

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply"
	"projector/internal/apply/wire"
	"projector/pkg/projections"
)

// Mode selects which records a Rebuilder applies.
type Mode uint8

const (
	// All is for records whose batch the consumers completed (at or
	// below their watermarks): every record is applied unless its marker
	// names another record (a duplicate); global writes follow, guarded by
	// the replayer's watermarks.
	All Mode = iota + 1
	// Marked is for records after the consumers' watermarks: only
	// those whose marker names this very record (a consumer applied the user
	// phase of their batch, leaving the held projections out, and crashed)
	// get their user writes; the consumers complete the global writes when
	// the batch is redelivered.
	Marked
)

// Rebuilder applies the writes of selected projections for a replayer
// rebuilding them while the consumers run and leave them out (hold:P). What
// it wrote survives a crash of the replayer: a batch read again applies
// nothing twice.
//   - A record whose marker names it (a consumer applied it) gets its user
//     writes under the user's rebuild watermarks px:rwm:{u:<user>}: one call
//     on the user's slot checks them (MODE_GLOBAL) and moves them to the
//     user's last such record of the batch per partition, with the writes.
//   - A record without a marker (it expired) gets one naming it and tagged
//     with this rebuild (origin~tag), set with its writes (MODE_USER); a
//     marker with this rebuild's tag says it was applied before a crash.
//   - A marker naming another record makes the record a duplicate.
type Rebuilder struct {
	base
	tag  string
	mode Mode
}

// NewRebuilder returns a Rebuilder in mode writing through rdb.
func NewRebuilder(rdb redis.UniversalClient, planner *projections.Planner, opts apply.Options, sel Selection, mode Mode) *Rebuilder {
	return &Rebuilder{base: newBase(rdb, planner, opts, sel), tag: sel.Tag, mode: mode}
}

// fate is what a Rebuilder does with one record.
type fate uint8

const (
	fateDuplicate fate = iota // a marker names another record
	fateSkip                  // Marked: no marker, the consumers apply it
	fateDone                  // applied by this rebuild before it was interrupted
	fateGuarded               // a consumer's marker: writes under px:rwm:{u:<user>}
	fateFresh                 // no marker: writes with a new, tagged marker
)

// fateOf decides a record's fate from its marker ("" when none).
func (a *Rebuilder) fateOf(it *apply.Item, marker string) fate {
	origin, tag, tagged := apply.SplitMarker(marker)
	switch {
	case marker == "" && a.mode == Marked:
		return fateSkip
	case marker == "":
		return fateFresh
	case origin != it.Origin():
		return fateDuplicate
	case tagged && tag == a.tag:
		return fateDone
	}
	return fateGuarded
}

// Apply applies the user writes of a batch's records as their markers say,
// in one pipeline per run (see run), then (All) their global writes,
// guarded by the replayer's watermarks.
func (a *Rebuilder) Apply(ctx context.Context, recs []apply.Record, ranges []apply.Range) (apply.Result, error) {
	b, markers, release, err := a.planMarked(ctx, recs, ranges)
	defer release()
	if err != nil {
		return *b.Result(), err
	}
	res := b.Result()
	runs := map[string][]run{}
	for i, it := range b.Items() {
		f := a.fateOf(it, markers[i])
		switch f {
		case fateDuplicate:
			res.Outcomes[it.Index()] = apply.Duplicate
		case fateSkip:
			res.Outcomes[it.Index()] = apply.Skipped
		case fateDone:
			res.Outcomes[it.Index()] = apply.Applied
		case fateGuarded, fateFresh:
			res.Outcomes[it.Index()] = apply.Applied // fresh ones: until their call says otherwise
			if f == fateFresh {
				it.Tag(a.tag) // the marker it gets names this rebuild
			} else if len(it.UserWrites()) == 0 {
				continue // nothing to write, nothing to order
			}
			u := it.Record().Event.UserID
			rs := runs[u]
			if len(rs) == 0 || rs[len(rs)-1].fate != f {
				rs = append(rs, run{fate: f})
			}
			rs[len(rs)-1].items = append(rs[len(rs)-1].items, it)
			runs[u] = rs
		}
	}
	for k := 0; ; k++ {
		fresh, freshOrder := map[string][]*apply.Item{}, []string(nil)
		guarded, order := map[string][]*apply.Item{}, []string(nil)
		for _, u := range b.Users() {
			if k >= len(runs[u]) {
				continue
			}
			if r := runs[u][k]; r.fate == fateFresh {
				fresh[u], freshOrder = r.items, append(freshOrder, u)
			} else {
				guarded[u], order = r.items, append(order, u)
			}
		}
		if len(freshOrder)+len(order) == 0 {
			break
		}
		if err := a.c.ApplyUsers(ctx, b, fresh, freshOrder); err != nil {
			return *res, err
		}
		if err := a.applyGuarded(ctx, res, guarded, order); err != nil {
			return *res, err
		}
	}
	if a.mode == Marked {
		return *res, nil
	}
	err = a.c.ApplyGlobal(ctx, b, a.wmKey)
	return *res, err
}

// run is a user's consecutive records of one fate (fresh or guarded) in a
// batch: runs are applied one after the other, so that the user's writes
// keep the log's order (a removal does not commute with views).
type run struct {
	fate  fate
	items []*apply.Item
}

// applyGuarded sends each user's writes of the records in groups as one call
// guarded by the user's rebuild watermarks, pipelined. A call that finds
// them at or past a record (applied before a crash) drops those records and
// is sent again with the rest.
func (a *Rebuilder) applyGuarded(ctx context.Context, res *apply.Result, groups map[string][]*apply.Item, pending []string) error {
	for len(pending) > 0 {
		calls := make([][]any, len(pending))
		rss := make([][]apply.Range, len(pending))
		for i, u := range pending {
			var ws []projections.Write
			for _, it := range groups[u] {
				ws = append(ws, it.UserWrites()...)
			}
			rss[i] = rangesOf(groups[u])
			calls[i] = a.c.GuardedCall(a.c.Keys().RebuildWatermarks(u), rss[i], apply.Coalesce(ws))
		}
		var next []string
		for i, cmd := range a.c.Exec(ctx, calls) {
			u := pending[i]
			res.UserCalls++
			r, err := wire.ReplyOf(cmd, len(rss[i]))
			if err != nil {
				return fmt.Errorf("rebuild user %q: %w", u, err)
			}
			switch r.Code {
			case wire.ReplyApplied:
				res.Writes += r.Writes
			case wire.ReplyFound:
				rest, err := unreached(groups[u], rss[i], r.Hits)
				if err != nil {
					return fmt.Errorf("rebuild user %q: %w", u, err)
				}
				if len(rest) > 0 {
					groups[u], next = rest, append(next, u)
				}
			default:
				return fmt.Errorf("rebuild user %q: %w", u, r.Unexpected())
			}
		}
		pending = next
	}
	return nil
}

// rangesOf returns, per partition, the offsets from the first to the last of g's records.
func rangesOf(g []*apply.Item) []apply.Range {
	var rs []apply.Range
	at := map[string]int{}
	for _, it := range g {
		r := it.Record()
		tp := r.TP().String()
		j, ok := at[tp]
		if !ok {
			at[tp], j = len(rs), len(rs)
			rs = append(rs, apply.Range{Topic: r.Topic, Partition: r.Partition, First: r.Offset, Last: r.Offset})
		}
		rs[j].First, rs[j].Last = min(rs[j].First, r.Offset), max(rs[j].Last, r.Offset)
	}
	return rs
}

// unreached returns the records of g after the watermarks that the hits
// report for the ranges rs.
func unreached(g []*apply.Item, rs []apply.Range, hits []wire.Hit) ([]*apply.Item, error) {
	wms := map[string]int64{}
	for _, h := range hits {
		wm, err := h.Offset()
		if err != nil {
			return nil, err
		}
		wms[rs[h.At].TP().String()] = wm
	}
	var rest []*apply.Item
	for _, it := range g {
		if wm, ok := wms[it.Record().TP().String()]; !ok || it.Record().Offset > wm {
			rest = append(rest, it)
		}
	}
	return rest, nil
}
