package replay

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"

	"projector/internal/apply"
	"projector/internal/records"
)

// preparer is an applier that can plan a batch while the previous one is
// applied (*apply.Applier).
type preparer interface {
	Prepare(ctx context.Context, recs []apply.Record, ranges []apply.Range) (*apply.Prepared, error)
	Commit(ctx context.Context, p *apply.Prepared) (apply.Result, error)
}

// step is one batch on its way: decoded, and planned when the applier is a preparer.
type step struct {
	n    int // records read
	recs []apply.Record
	bad  int // poison records
	rgs  []apply.Range
	plan *apply.Prepared // nil: applied by Apply
}

// prepareStep decodes a batch and, when a is a preparer, plans it.
func prepareStep(ctx context.Context, msgs []kafka.Message, maxBytes int, a batchApplier) (*step, error) {
	recs, bad, rgs := records.Split(msgs, maxBytes)
	st := &step{n: len(msgs), recs: recs, bad: len(bad), rgs: rgs}
	if p, ok := a.(preparer); ok {
		var err error
		if st.plan, err = p.Prepare(ctx, recs, rgs); err != nil {
			return nil, st.failed("plan", err)
		}
	}
	return st, nil
}

// applySteps applies a lane's steps in order (planned ones by Commit, the
// others by Apply), cancelling ctx at the first error; the steps after it
// are released.
func applySteps(ctx context.Context, cancel context.CancelCauseFunc, steps <-chan *step, a batchApplier, sum *Summary, prog *progress) {
	for st := range steps {
		if ctx.Err() != nil {
			st.release()
			continue
		}
		var res apply.Result
		var err error
		if st.plan != nil {
			res, err = a.(preparer).Commit(ctx, st.plan)
		} else {
			res, err = a.Apply(ctx, st.recs, st.rgs)
		}
		if err != nil {
			cancel(st.failed("apply", err))
			continue
		}
		st.count(res, sum, prog)
	}
}

// release frees what a step that is not applied holds.
func (st *step) release() {
	if st.plan != nil {
		st.plan.Release()
	}
}

// failed wraps err of what the step was doing (plan, apply) with the batch's ranges.
func (st *step) failed(doing string, err error) error {
	return fmt.Errorf("%s a batch of %d records (%s): %w", doing, st.n, describeRanges(st.rgs), err)
}

// count adds the applied batch to the summary and the progress.
func (st *step) count(res apply.Result, sum *Summary, prog *progress) {
	for i, rec := range st.recs {
		switch res.Outcomes[i] {
		case apply.Applied:
			sum.ByType[string(rec.Event.Type)]++
		case apply.Duplicate:
			sum.Duplicates++
		}
	}
	sum.Poison += int64(st.bad)
	sum.Writes += res.Writes
	sum.Events += int64(st.n)
	prog.add(int64(st.n))
}
