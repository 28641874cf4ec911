package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"projector/internal/apply/wire"
	"projector/internal/coord"
	"projector/internal/offsets"
	"projector/pkg/projections"
)

// globalGuard is how the global script call of a batch is guarded.
type globalGuard struct {
	// wmKey is the hash of the per-partition watermarks.
	wmKey string
	// mode is ModeGlobal, or ModeGlobalGaps to refuse a batch after a gap.
	mode wire.Mode
	// meta makes the script check px:meta:{g}: its status, and that its
	// holds are those the batch was planned with.
	meta bool
}

// applyGlobal applies the global writes of b's applied records in one
// script call guarded by the per-partition watermarks, and moves the
// watermarks to the end of each range. When a watermark already lies inside
// a range (an earlier delivery applied part of it), the records up to it are
// dropped and it tries again.
func (c *Core) applyGlobal(ctx context.Context, b *Batch, g globalGuard) error {
	done := b.applied()
	rs := unapplied(b.ranges, b.wms)
	for len(rs) > 0 {
		call := c.globalCall(g, rs, b.heldRaw, globalWrites(done, rs, b.held))
		b.res.GlobalCalls++
		r, err := c.script.Run(ctx, c.rdb, call, len(rs))
		if err != nil {
			return fmt.Errorf("apply global writes: %w", err)
		}
		switch r.Code {
		case wire.ReplyApplied:
			b.res.Writes += r.Writes
			return nil
		case wire.ReplyFound:
			if rs, err = advance(rs, r.Hits); err != nil {
				return fmt.Errorf("apply global writes: %w", err)
			}
		case wire.ReplyHoldsChanged:
			return errHoldsChanged
		case wire.ReplyGap:
			return gapsOf(r, rs, "")
		case wire.ReplyNotReady:
			return &NotReadyError{Status: r.Status}
		default:
			return fmt.Errorf("apply global writes: %w", r.Unexpected())
		}
	}
	return nil
}

// ApplyGlobal runs the global step of b's applied records guarded by the
// watermarks in wmKey alone (no meta hash, no gap check): the replayer's,
// while it rebuilds projections beside the consumers.
func (c *Core) ApplyGlobal(ctx context.Context, b *Batch, wmKey string) error {
	return c.applyGlobal(ctx, b, globalGuard{wmKey: wmKey, mode: wire.ModeGlobal})
}

// GuardedCall is the script call that applies ws, whose keys share one
// slot, over the ranges rs guarded by the watermarks in wmKey (a hash of
// that slot): it moves them to the end of each range, or, when one lies at
// or past a range's first offset, writes nothing and names it.
func (c *Core) GuardedCall(wmKey string, rs []Range, ws []projections.Write) []any {
	return c.globalCall(globalGuard{wmKey: wmKey, mode: wire.ModeGlobal}, rs, nil, ws)
}

// unapplied returns the ranges, each starting after its watermark in wms,
// that hold records after it.
func unapplied(ranges []Range, wms map[string]string) []Range {
	rs := make([]Range, 0, len(ranges))
	for _, r := range ranges {
		if wm, ok := wms[r.TP().String()]; ok {
			if w, err := strconv.ParseInt(wm, 10, 64); err == nil {
				if w >= r.Last {
					continue
				}
				r.First = max(r.First, w+1)
			}
		}
		rs = append(rs, r)
	}
	return rs
}

// advance moves each range a reply names past the watermark it holds,
// dropping the ranges that it covers.
func advance(rs []Range, hits []wire.Hit) ([]Range, error) {
	wms := make(map[int]int64, len(hits))
	for _, h := range hits {
		wm, err := h.Offset()
		if err != nil {
			return nil, err
		}
		wms[h.At] = wm
	}
	var next []Range
	for j, r := range rs {
		if wm, ok := wms[j]; ok {
			if wm >= r.Last {
				continue
			}
			r.First = wm + 1
		}
		next = append(next, r)
	}
	return next, nil
}

// globalWrites coalesces the global writes of the records of done inside
// the ranges rs, leaving out the held ones.
func globalWrites(done []*Item, rs []Range, held coord.Holds) []projections.Write {
	total := 0
	for _, it := range done {
		total += len(it.global)
	}
	co := newCoalescer(total)
	for _, it := range done {
		r := it.rec
		if !insideRange(rs, r.TP(), r.Offset) {
			continue
		}
		if len(held) == 0 {
			for i := range it.global {
				co.add(&it.global[i])
			}
			continue
		}
		tp := r.TP().String()
		for i := range it.global {
			if !held.Skip(&it.global[i], tp, r.Offset) {
				co.add(&it.global[i])
			}
		}
	}
	return co.out
}

// insideRange reports whether offset of tp lies at or after the first
// offset of tp's range in rs (a batch has a range for a few partitions: a
// scan costs less than formatting tp for a map).
func insideRange(rs []Range, tp offsets.TopicPartition, offset int64) bool {
	for i := range rs {
		if rs[i].Partition == tp.Partition && rs[i].Topic == tp.Topic {
			return offset >= rs[i].First
		}
	}
	return false
}

// globalCall is the script call that applies ws over the ranges rs under
// guard g, for a batch planned with the hold fields heldRaw.
func (c *Core) globalCall(g globalGuard, rs []Range, heldRaw []string, ws []projections.Write) []any {
	n := 3 + 3*len(rs) + len(heldRaw) + wire.ArgCount(ws)
	var call []any
	if g.meta {
		call = c.script.Start(n, g.wmKey, c.keys.Meta())
	} else {
		call = c.script.Start(n, g.wmKey)
	}
	call = append(call, g.mode.Arg(), g.wmKey, strconv.Itoa(len(rs)))
	for _, r := range rs {
		call = append(call, r.TP().String(), strconv.FormatInt(r.First, 10), strconv.FormatInt(r.Last, 10))
	}
	call = append(call, strconv.Itoa(len(heldRaw)/2))
	for _, v := range heldRaw {
		call = append(call, v)
	}
	return wire.AppendWrites(call, ws)
}

// errHoldsChanged says a replayer changed a hold after the batch was planned.
var errHoldsChanged = errors.New("projection holds changed while the batch was applied")

// NotReadyError says the meta hash px:meta:{g} is missing (Redis lost its
// data, or was never initialised) or not "ready" (a replay is running): the
// batch was not completed and must not be committed.
type NotReadyError struct {
	// Status is the meta status ("" when the hash is missing).
	Status string
}

func (e *NotReadyError) Error() string {
	if e.Status == "" {
		return "redis holds no projector meta hash (px:meta:{g}): data lost or never initialised"
	}
	return "projections not ready: meta status " + e.Status
}

// Gap is a partition whose applied records Redis lost: it holds Applied as
// the last applied offset, below the records that came after.
type Gap struct {
	Topic     string
	Partition int
	// Applied is the last offset whose effects the watermark says are in Redis.
	Applied int64
	// Node names the Redis Cluster master that went back in time ("" for
	// the global watermarks, px:wm:{g}).
	Node string
}

// GapError says Redis holds watermarks below the records that came before a
// batch: it went back in time (a restart from an older snapshot, a lost AOF
// tail, a lagging replica promoted) after those records were applied. The
// batch was not completed; the records after each gap's Applied must be
// applied again (Repair) before it.
type GapError struct {
	Gaps []Gap
}

func (e *GapError) Error() string {
	parts := make([]string, len(e.Gaps))
	for i, g := range e.Gaps {
		where := "global watermarks"
		if g.Node != "" {
			where = "master " + g.Node
		}
		parts[i] = fmt.Sprintf("%s:%d applied up to %d (%s)", g.Topic, g.Partition, g.Applied, where)
	}
	return "redis went back in time: " + strings.Join(parts, ", ")
}

// gapsOf is the *GapError of a ReplyGap reply r to a call over the ranges rs.
func gapsOf(r wire.Reply, rs []Range, node string) error {
	ge := &GapError{}
	for _, h := range r.Hits {
		wm, err := h.Offset()
		if err != nil {
			return fmt.Errorf("gap reply: %w", err)
		}
		rg := rs[h.At]
		ge.Gaps = append(ge.Gaps, Gap{Topic: rg.Topic, Partition: rg.Partition, Applied: wm, Node: node})
	}
	return ge
}
