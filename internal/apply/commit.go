package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Prepared is a batch that Prepare planned and Commit applies.
type Prepared struct {
	b       *Batch
	release func()
	again   bool // planned on watermarks Redis no longer holds: apply it whole
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
// before it; the result is the one Apply gives. It is CommitUsers, then
// CommitGlobal.
func (a *Applier) Commit(ctx context.Context, p *Prepared) (Result, error) {
	if err := a.CommitUsers(ctx, p); err != nil {
		p.Release()
		return p.b.res, err
	}
	return a.CommitGlobal(ctx, p)
}

// CommitUsers is the first part of Commit: the user phase of a batch that
// Prepare planned. It may run while CommitGlobal of the batch before runs
// (their keys differ; a crash in between leaves this batch's user writes
// with their markers, which a rerun finds, as after a crash between the
// phases of one batch), but only after CommitUsers of the batch before
// returned, so that its markers make this batch's duplicates of its records
// known. With GapCheck the watermarks are read again first (the previous
// batch raised them); when one of the batch's partitions went below what
// Prepare read (Redis went back in time meanwhile, so the plan may skip
// records Redis no longer holds), the batch is left to CommitGlobal to
// apply again whole, as by Apply. On an error p must still be released.
func (a *Applier) CommitUsers(ctx context.Context, p *Prepared) error {
	b := p.b
	if a.guards.GapCheck {
		wms, err := a.rdb.HGetAll(ctx, a.keys.Watermarks()).Result()
		if err != nil {
			return fmt.Errorf("read watermarks: %w", err)
		}
		if err := a.nodes.precheck(ctx, b.ranges, wms); err != nil {
			return err
		}
		if fell(b.ranges, b.wms, wms) {
			p.Release()
			p.again = true
			return nil
		}
	}
	return a.applyUsers(ctx, b)
}

// CommitGlobal is the rest of Commit, after CommitUsers of the batch: the
// global phase and the seal, in the order of the batches. When the holds
// changed since Prepare, the batch is applied again whole, as by Apply. It
// releases p.
func (a *Applier) CommitGlobal(ctx context.Context, p *Prepared) (Result, error) {
	defer p.Release()
	b := p.b
	if p.again {
		return a.applyLoop(ctx, b.recs, b.ranges, false)
	}
	err := a.globalAndSeal(ctx, b)
	if errors.Is(err, errHoldsChanged) {
		p.Release()
		return a.applyLoop(ctx, b.recs, b.ranges, false)
	}
	return b.res, err
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
