package apply

import (
	"context"
	"errors"
	"fmt"
)

// Prepared is a batch that Prepare planned and Commit (or CommitUsers and
// then CommitGlobal) applies.
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
// before it; the result is the one Apply gives. When the holds changed since
// Prepare the batch is planned again, as in Apply.
func (a *Applier) Commit(ctx context.Context, p *Prepared) (Result, error) {
	if err := a.CommitUsers(ctx, p); err != nil {
		p.Release()
		return p.b.res, err
	}
	res, err := a.commitGlobal(ctx, p)
	if errors.Is(err, errHoldsChanged) {
		return a.applyLoop(ctx, p.b.recs, p.b.ranges, false)
	}
	return res, err
}

// CommitUsers is the first half of Commit: the user phase of a prepared
// batch (with GapCheck the watermarks are read again first, since the
// previous batch raised them). CommitGlobal completes it. The user phase of
// the next batch may run beside the global phase of this one: they write
// other keys, and the global phases, which raise the watermarks, still come
// in order, each after its own batch's user phase, so a record at or below
// a watermark stays applied whole.
func (a *Applier) CommitUsers(ctx context.Context, p *Prepared) error {
	b := p.b
	if a.guards.GapCheck {
		wms, err := a.rdb.HGetAll(ctx, a.keys.Watermarks()).Result()
		if err != nil {
			return fmt.Errorf("read watermarks: %w", err)
		}
		if err := a.precheck(ctx, b.ranges, wms); err != nil {
			return err
		}
	}
	return a.applyUsers(ctx, b, modeUser)
}

// CommitGlobal is the second half of Commit, after CommitUsers: the global
// phase and the seal; it releases p. It fails, writing nothing global, when
// the holds changed since Prepare (an Applier with IgnoreMeta reads none).
func (a *Applier) CommitGlobal(ctx context.Context, p *Prepared) (Result, error) {
	res, err := a.commitGlobal(ctx, p)
	if errors.Is(err, errHoldsChanged) {
		return res, fmt.Errorf("apply global writes: the holds changed since the batch was planned; apply it again")
	}
	return res, err
}

// commitGlobal runs the global phase and the seal of p and releases it.
func (a *Applier) commitGlobal(ctx context.Context, p *Prepared) (Result, error) {
	defer p.Release()
	b := p.b
	if err := a.applyGlobal(ctx, b, a.globalGuard()); err != nil {
		return b.res, err
	}
	return b.res, a.sealBatch(ctx, b.ranges)
}
