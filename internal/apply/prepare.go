package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Prepared is a batch that Prepare planned and Commit applies.
type Prepared struct {
	b       *batch
	release func()
}

// Release frees the planned writes of a batch that is not committed.
func (p *Prepared) Release() {
	if p.release != nil {
		p.release()
		p.release = nil
	}
}

// Prepare is the first part of Apply, the part that does not depend on the
// batches before it: it reads the watermarks and the meta hash and plans the
// records, so that a caller can plan the next batch while Redis applies the
// previous one. Watermarks read before the previous batch was applied only
// let fewer records be skipped up front; the markers and the global script
// decide the others as in Apply. A Prepared that is not committed must be
// released.
func (a *Applier) Prepare(ctx context.Context, recs []Record, ranges []Range) (*Prepared, error) {
	b := newBatch(recs, ranges)
	if err := a.readState(ctx, b); err != nil {
		return nil, err
	}
	return &Prepared{b: b, release: a.plan(b, b.wms)}, nil
}

// Commit applies a batch that Prepare planned, after the batches committed
// before it; the result is the one Apply gives. With GapCheck the watermarks
// are read again first (the previous batch raised them); when one of the
// batch's partitions went below what Prepare read (Redis went back in time
// meanwhile, so the plan may skip records Redis no longer holds), or when
// the holds changed since Prepare, the batch is planned again, as by Apply.
func (a *Applier) Commit(ctx context.Context, p *Prepared) (Result, error) {
	defer p.Release()
	b := p.b
	if a.guards.GapCheck {
		wms, err := a.rdb.HGetAll(ctx, a.keys.Watermarks()).Result()
		if err != nil {
			return b.res, fmt.Errorf("read watermarks: %w", err)
		}
		if err := a.precheck(ctx, b.ranges, wms); err != nil {
			return b.res, err
		}
		if fell(b.ranges, b.wms, wms) {
			p.Release()
			return a.applyLoop(ctx, b.recs, b.ranges, false)
		}
	}
	res, err := a.phases(ctx, b)
	if errors.Is(err, errHoldsChanged) {
		return a.applyLoop(ctx, b.recs, b.ranges, false)
	}
	return res, err
}

// fell reports whether the watermark of a partition of ranges is lower in
// now than in before (a missing one counts as -1).
func fell(ranges []Range, before, now map[string]string) bool {
	at := func(h map[string]string, f string) int64 {
		if n, err := strconv.ParseInt(h[f], 10, 64); err == nil {
			return n
		}
		return -1
	}
	for _, r := range ranges {
		f := r.TP().String()
		if at(now, f) < at(before, f) {
			return true
		}
	}
	return false
}
