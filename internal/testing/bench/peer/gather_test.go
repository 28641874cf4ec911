package peer

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestGatherFillsOrClosesWhenIdle: records at hand fill a batch up to
// maxEvents; caught up with the log (high watermark right after the
// records), the batch closes once maxWait has passed since its first
// record, holding what came; behind the log, it closes once no record came
// for a whole maxWait.
func TestGatherFillsOrClosesWhenIdle(t *testing.T) {
	ctx := context.Background()
	in := make(chan kafka.Message, 10)
	for i := range 10 {
		in <- kafka.Message{Offset: int64(i)}
	}
	b, err := gather(ctx, in, nil, 4, time.Hour)
	if err != nil || len(b) != 4 || b[3].Offset != 3 {
		t.Fatalf("full batch = %v, %v; want offsets 0..3", b, err)
	}
	b, err = gather(ctx, in, b[:0], 100, 20*time.Millisecond)
	if err != nil || len(b) != 6 || b[0].Offset != 4 {
		t.Fatalf("idle batch = %v, %v; want the 6 records left", b, err)
	}
	in <- kafka.Message{Offset: 10, HighWaterMark: 100_000}
	b, err = gather(ctx, in, b[:0], 100, 20*time.Millisecond)
	if err != nil || len(b) != 1 {
		t.Fatalf("batch behind the log = %v, %v; want the one record", b, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := gather(cancelled, in, nil, 100, time.Millisecond); err == nil {
		t.Error("gather on a cancelled context with nothing at hand returned no error")
	}
}
