package replay

import (
	"context"
	"strings"
	"testing"
	"time"

	"projector/internal/testredis"
)

// TestProgressPublishedToMeta: the progress goes into the meta hash at the
// start, at most once a second, and at the end; a resumed run counts the
// records done before and rates only its own.
func TestProgressPublishedToMeta(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	now := time.UnixMilli(1_800_000_000_000)
	var out strings.Builder
	p := newProgress(&out, false, 1000)
	p.now, p.start, p.last = func() time.Time { return now }, now, now
	p.resumeAt(400).publishTo(ctx, rdb, "px:meta:{g}")
	field := func(f string) string { return rdb.HGet(ctx, "px:meta:{g}", f).Val() }
	if field(FieldDone) != "400" || field(FieldTotal) != "1000" || field(FieldRate) != "0" {
		t.Fatalf("at the start: %v", rdb.HGetAll(ctx, "px:meta:{g}").Val())
	}
	now = now.Add(500 * time.Millisecond)
	p.add(50)
	if field(FieldDone) != "400" {
		t.Errorf("published again within a second: done %s", field(FieldDone))
	}
	now = now.Add(1500 * time.Millisecond)
	p.add(150) // 200 records in 2 s
	if field(FieldDone) != "600" || field(FieldRate) != "100" || field(FieldUpdatedMs) != "1800000002000" {
		t.Errorf("after 2 s: %v", rdb.HGetAll(ctx, "px:meta:{g}").Val())
	}
	if !strings.Contains(out.String(), "600/1000 events (60.0%), 100 ev/s, ETA 4s") {
		t.Errorf("progress line: %q", out.String())
	}
	now = now.Add(100 * time.Millisecond)
	p.add(400)
	p.done()
	if field(FieldDone) != "1000" {
		t.Errorf("at the end: done %s", field(FieldDone))
	}
}
