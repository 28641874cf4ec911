package replay

import (
	"context"
	"testing"
	"time"
)

// TestPacerKeepsTheRate: batches of n records are spread n/rate seconds
// apart on the pacer's schedule; the first starts at once; no pacer (rate
// 0) never waits.
func TestPacerKeepsTheRate(t *testing.T) {
	if p := newPacer(0, time.Now); p != nil {
		t.Fatalf("newPacer(0) = %v, want nil (no limit)", p)
	}
	var none *pacer
	if err := none.wait(context.Background(), 1_000_000); err != nil || none.limit() != 0 {
		t.Fatalf("nil pacer: wait %v, limit %v; want no wait and no limit", err, none.limit())
	}
	clock := time.Unix(1_000, 0)
	p := newPacer(1000, func() time.Time { return clock })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a wait that would block returns the cancellation instead
	if err := p.wait(ctx, 500); err != nil {
		t.Fatalf("first batch waited: %v", err)
	}
	if got, want := p.due, clock.Add(500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after 500 records at 1000/s the next batch is due at %v, want %v", got, want)
	}
	if err := p.wait(ctx, 250); err == nil {
		t.Fatalf("a second batch 0 s later did not wait")
	}
	clock = clock.Add(2 * time.Second) // idle time is not saved up as a burst
	if err := p.wait(ctx, 100); err != nil {
		t.Fatalf("a batch after an idle spell waited: %v", err)
	}
	if got, want := p.due, clock.Add(100*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after an idle spell the next batch is due at %v, want %v", got, want)
	}
	if got := pacedBatch(10_000, 1500); got != 1500 {
		t.Errorf("pacedBatch(10000, 1500) = %d, want 1500 (a second of records)", got)
	}
	if got := pacedBatch(10_000, 0); got != 10_000 {
		t.Errorf("pacedBatch(10000, 0) = %d, want 10000", got)
	}
}
