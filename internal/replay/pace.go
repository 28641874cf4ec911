package replay

import (
	"context"
	"sync"
	"time"
)

// pacer keeps a replay at or below a rate of records per second
// (--max-rate), so that a rebuild next to running consumers leaves Redis
// room for their live batches. It is shared by every lane of a run.
type pacer struct {
	rate float64 // records per second; 0: no limit
	now  func() time.Time

	mu  sync.Mutex
	due time.Time // when the next batch may start
}

// newPacer returns a pacer for rate records per second (nil for rate <= 0:
// no limit).
func newPacer(rate int, now func() time.Time) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{rate: float64(rate), now: now}
}

// wait blocks until a batch of n records may be applied: each batch takes
// n/rate seconds of the schedule, the first one starts at once.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	now := p.now()
	start := p.due
	if start.Before(now) {
		start = now
	}
	p.due = start.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	p.mu.Unlock()
	if d := start.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
	return nil
}

// limit is the rate (0 for a nil pacer: no limit).
func (p *pacer) limit() float64 {
	if p == nil {
		return 0
	}
	return p.rate
}

// pacedBatch is the batch size under a rate limit: at most a second of
// records, so that the pace is smooth (batch otherwise).
func pacedBatch(batch, rate int) int {
	if rate > 0 && rate < batch {
		return rate
	}
	return batch
}
