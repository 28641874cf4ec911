package replay

import (
	"context"
	"strings"
	"testing"
	"time"

	"projector/internal/coord"
	"projector/internal/testing/testredis"
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
	p.resumeAt(400).publishTo(ctx, coord.New(rdb, "", time.Now))
	field := func(f string) string { return rdb.HGet(ctx, "px:meta:{g}", f).Val() }
	if field(coord.FieldDone) != "400" || field(coord.FieldTotal) != "1000" || field(coord.FieldRate) != "0" {
		t.Fatalf("at the start: %v", rdb.HGetAll(ctx, "px:meta:{g}").Val())
	}
	now = now.Add(500 * time.Millisecond)
	p.add(50)
	if field(coord.FieldDone) != "400" {
		t.Errorf("published again within a second: done %s", field(coord.FieldDone))
	}
	now = now.Add(1500 * time.Millisecond)
	p.add(150) // 200 records in 2 s
	if field(coord.FieldDone) != "600" || field(coord.FieldRate) != "100" || field(coord.FieldUpdatedMs) != "1800000002000" {
		t.Errorf("after 2 s: %v", rdb.HGetAll(ctx, "px:meta:{g}").Val())
	}
	if !strings.Contains(out.String(), "600/1000 events (60.0%), 100 ev/s, ETA 4s") {
		t.Errorf("progress line: %q", out.String())
	}
	now = now.Add(100 * time.Millisecond)
	p.add(400)
	p.done()
	if field(coord.FieldDone) != "1000" {
		t.Errorf("at the end: done %s", field(coord.FieldDone))
	}
}
