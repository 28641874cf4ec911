package replay

import (
	"context"
	"fmt"
	"sync"

	"github.com/segmentio/kafka-go"

	"projector/internal/apply"
	"projector/internal/fetch"
	"projector/internal/records"
)

// preparer is an applier that can plan a batch while the previous one is
// applied, and apply a batch's user writes while the previous one's global
// writes are applied (*apply.Applier).
type preparer interface {
	Prepare(ctx context.Context, recs []apply.Record, ranges []apply.Range) (*apply.Prepared, error)
	CommitUsers(ctx context.Context, p *apply.Prepared) error
	CommitGlobal(ctx context.Context, p *apply.Prepared) (apply.Result, error)
}

// step is one batch on its way: decoded, and planned when the applier is a preparer.
type step struct {
	n    int   // records read
	skip int64 // offsets skipped: transaction markers, records of aborted transactions (placeholders)
	recs []apply.Record
	bad  int // poison records
	rgs  []apply.Range
	plan *apply.Prepared // nil: applied by Apply
}

// prepareStep decodes a batch and, when a is a preparer, plans it.
func prepareStep(ctx context.Context, msgs []kafka.Message, maxBytes int, a batchApplier) (*step, error) {
	recs, bad, rgs := records.Split(msgs, maxBytes)
	st := &step{n: len(msgs), recs: recs, bad: len(bad), rgs: rgs}
	for _, m := range msgs {
		if _, ok := fetch.SkippedOf(m); ok {
			st.n--
			st.skip += fetch.Covered(m)
		}
	}
	if p, ok := a.(preparer); ok {
		var err error
		if st.plan, err = p.Prepare(ctx, recs, rgs); err != nil {
			return nil, st.failed("plan", err)
		}
	}
	return st, nil
}

// applySteps applies a lane's steps in order (planned ones by commitSteps,
// the others by Apply), cancelling ctx at the first error; the steps after
// it are released.
func applySteps(ctx context.Context, cancel context.CancelCauseFunc, steps <-chan *step, a batchApplier, sum *Summary, prog *progress) {
	if p, ok := a.(preparer); ok {
		commitSteps(ctx, cancel, steps, p, sum, prog)
		return
	}
	for st := range steps {
		if ctx.Err() != nil {
			continue
		}
		res, err := a.Apply(ctx, st.recs, st.rgs)
		if err != nil {
			cancel(st.failed("apply", err))
			continue
		}
		st.count(res, sum, prog)
	}
}

// commitSteps commits planned steps in two stages, so that Redis applies a
// batch's user writes while the replayer coalesces the previous batch's
// global writes, and the global call of one batch while the user calls of
// the next are encoded: each step's user phase (CommitUsers) follows the
// previous step's, and its global phase (CommitGlobal, in a goroutine of
// its own) the previous step's global phase.
func commitSteps(ctx context.Context, cancel context.CancelCauseFunc, steps <-chan *step, p preparer, sum *Summary, prog *progress) {
	globals := make(chan *step)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for st := range globals {
			if ctx.Err() != nil {
				st.release()
				continue
			}
			res, err := p.CommitGlobal(ctx, st.plan)
			if err != nil {
				cancel(st.failed("apply", err))
				continue
			}
			st.count(res, sum, prog)
		}
	}()
	for st := range steps {
		if ctx.Err() == nil {
			if err := p.CommitUsers(ctx, st.plan); err != nil {
				cancel(st.failed("apply", err))
			}
		}
		if ctx.Err() != nil {
			st.release()
			continue
		}
		globals <- st
	}
	close(globals)
	wg.Wait()
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
	sum.Skipped += st.skip
	prog.add(int64(st.n) + st.skip) // the plan counts offsets
}
