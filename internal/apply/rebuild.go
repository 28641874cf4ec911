package apply

import (
	"context"
	"errors"
	"fmt"
	"projector/internal/apply/wire"
	"strings"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// RebuildMode selects which records a Rebuilder applies.
type RebuildMode uint8

const (
	// RebuildAll is for records whose batch the consumers completed (at or
	// below their watermarks): every record is applied unless its marker
	// names another record (a duplicate); global writes follow, guarded by
	// the replayer's watermarks.
	RebuildAll RebuildMode = iota + 1
	// RebuildMarked is for records after the consumers' watermarks: only
	// those whose marker names this very record (a consumer applied the user
	// phase of their batch, leaving the held projections out, and crashed)
	// get their user writes; the consumers complete the global writes when
	// the batch is redelivered.
	RebuildMarked
)

// tagSep separates a record's origin from the tag of the rebuild that set
// its marker (Kafka topic names never hold it).
const tagSep = "~"

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
	core
	wmKey string
	tag   string
	mode  RebuildMode
}

// NewRebuilder returns a Rebuilder in mode writing through rdb.
func NewRebuilder(rdb redis.UniversalClient, planner *projections.Planner, opts Options, sel Selection, mode RebuildMode) *Rebuilder {
	return &Rebuilder{core: newCore(rdb, planner, opts, sel.Only), wmKey: sel.WatermarkKey, tag: sel.Tag, mode: mode}
}

// fate is what a Rebuilder does with one record.
type fate uint8

const (
	fateDuplicate fate = iota // a marker names another record
	fateSkip                  // RebuildMarked: no marker, the consumers apply it
	fateDone                  // applied by this rebuild before it was interrupted
	fateGuarded               // a consumer's marker: writes under px:rwm:{u:<user>}
	fateFresh                 // no marker: writes with a new, tagged marker
)

// fateOf decides a record's fate from its marker ("" when none).
func (a *Rebuilder) fateOf(it *item, marker string) fate {
	base, tag, tagged := strings.Cut(marker, tagSep)
	switch {
	case marker == "" && a.mode == RebuildMarked:
		return fateSkip
	case marker == "":
		return fateFresh
	case base != it.origin:
		return fateDuplicate
	case tagged && tag == a.tag:
		return fateDone
	}
	return fateGuarded
}

// Apply applies the user writes of a batch's records as their markers say,
// in one pipeline per run (see run), then (RebuildAll) their global writes,
// guarded by the replayer's watermarks.
func (a *Rebuilder) Apply(ctx context.Context, recs []Record, ranges []Range) (Result, error) {
	b, release, err := a.planAfter(ctx, recs, ranges, a.wmKey)
	if err != nil {
		return b.res, err
	}
	defer release()
	markers, err := a.readMarkers(ctx, b.all)
	if err != nil {
		return b.res, err
	}
	runs := map[string][]run{}
	for i, it := range b.all {
		if m := markers[i]; m != "" && !namesRecord(m, it) {
			it.adopt(m, &b.res)
		}
		f := a.fateOf(it, markers[i])
		switch f {
		case fateDuplicate:
			b.res.Outcomes[it.idx] = Duplicate
		case fateSkip:
			b.res.Outcomes[it.idx] = Skipped
		case fateDone:
			b.res.Outcomes[it.idx] = Applied
		case fateGuarded, fateFresh:
			b.res.Outcomes[it.idx] = Applied // fresh ones: until their call says otherwise
			if f == fateFresh {
				it.origin += tagSep + a.tag // the marker it gets names this rebuild
			} else if len(it.user) == 0 {
				continue // nothing to write, nothing to order
			}
			u := it.rec.Event.UserID
			rs := runs[u]
			if len(rs) == 0 || rs[len(rs)-1].fate != f {
				rs = append(rs, run{fate: f})
			}
			rs[len(rs)-1].items = append(rs[len(rs)-1].items, it)
			runs[u] = rs
		}
	}
	for k := 0; ; k++ {
		fresh := &batch{groups: map[string][]*item{}, res: Result{Outcomes: b.res.Outcomes}}
		guarded, order := map[string][]*item{}, []string(nil)
		for _, u := range b.order {
			if k >= len(runs[u]) {
				continue
			}
			if r := runs[u][k]; r.fate == fateFresh {
				fresh.groups[u], fresh.order = r.items, append(fresh.order, u)
			} else {
				guarded[u], order = r.items, append(order, u)
			}
		}
		if len(fresh.order)+len(order) == 0 {
			break
		}
		err := a.applyUsers(ctx, fresh, wire.ModeUser)
		b.res.Writes, b.res.UserCalls = b.res.Writes+fresh.res.Writes, b.res.UserCalls+fresh.res.UserCalls
		if err != nil {
			return b.res, err
		}
		if err := a.applyGuarded(ctx, b, guarded, order); err != nil {
			return b.res, err
		}
	}
	if a.mode == RebuildMarked {
		return b.res, nil
	}
	return b.res, a.applyGlobal(ctx, b, globalGuard{wmKey: a.wmKey, mode: wire.ModeGlobal})
}

// run is a user's consecutive records of one fate (fresh or guarded) in a
// batch: runs are applied one after the other, so that the user's writes
// keep the log's order (a removal does not commute with views).
type run struct {
	fate  fate
	items []*item
}

// applyGuarded sends each user's writes of the records in groups as one call
// guarded by the user's rebuild watermarks, pipelined. A call that finds
// them at or past a record (applied before a crash) drops those records and
// is sent again with the rest.
func (a *Rebuilder) applyGuarded(ctx context.Context, b *batch, groups map[string][]*item, pending []string) error {
	for len(pending) > 0 {
		calls := make([][]any, len(pending))
		rss := make([][]Range, len(pending))
		for i, u := range pending {
			var ws []projections.Write
			for _, it := range groups[u] {
				ws = append(ws, it.user...)
			}
			rss[i] = rangesOf(groups[u])
			guard := globalGuard{wmKey: a.keys.RebuildWatermarks(u), mode: wire.ModeGlobal}
			calls[i] = a.globalCall(guard, rss[i], nil, Coalesce(ws))
		}
		var next []string
		for i, cmd := range a.script.Exec(ctx, a.rdb, calls, nil) {
			u := pending[i]
			b.res.UserCalls++
			r, err := wire.ReplyOf(cmd, len(rss[i]))
			if err != nil {
				return fmt.Errorf("rebuild user %q: %w", u, err)
			}
			switch r.Code {
			case wire.ReplyApplied:
				b.res.Writes += r.Writes
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
func rangesOf(g []*item) []Range {
	var rs []Range
	at := map[string]int{}
	for _, it := range g {
		tp := it.rec.TP().String()
		j, ok := at[tp]
		if !ok {
			at[tp], j = len(rs), len(rs)
			rs = append(rs, Range{Topic: it.rec.Topic, Partition: it.rec.Partition, First: it.rec.Offset, Last: it.rec.Offset})
		}
		rs[j].First, rs[j].Last = min(rs[j].First, it.rec.Offset), max(rs[j].Last, it.rec.Offset)
	}
	return rs
}

// unreached returns the records of g after the watermarks that the hits
// report for the ranges rs.
func unreached(g []*item, rs []Range, hits []wire.Hit) ([]*item, error) {
	wms := map[string]int64{}
	for _, h := range hits {
		wm, err := h.Offset()
		if err != nil {
			return nil, err
		}
		wms[rs[h.At].TP().String()] = wm
	}
	var rest []*item
	for _, it := range g {
		if wm, ok := wms[it.rec.TP().String()]; !ok || it.rec.Offset > wm {
			rest = append(rest, it)
		}
	}
	return rest, nil
}

// readMarkers returns the origin each record's marker holds ("" when none).
func (c *core) readMarkers(ctx context.Context, items []*item) ([]string, error) {
	pipe := c.rdb.Pipeline()
	marks := make([]*redis.StringCmd, len(items))
	for i, it := range items {
		marks[i] = pipe.HGet(ctx, it.marker, it.rec.Event.ID)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read idempotency markers: %w", err)
	}
	origins := make([]string, len(items))
	for i, m := range marks {
		o, err := m.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read marker of event %s: %w", items[i].rec.Event.ID, err)
		}
		origins[i] = o
	}
	return origins, nil
}

// namesRecord reports whether a marker's origin (tagged by a rebuild or
// not) is it's own.
func namesRecord(marker string, it *item) bool {
	base, _, _ := strings.Cut(marker, tagSep)
	return base == it.origin
}
