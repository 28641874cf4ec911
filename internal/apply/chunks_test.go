package apply

import (
	"context"
	"fmt"
	"testing"
	"time"

	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// TestApplyManyUsers: a batch with more users than one pipeline chunk goes
// to Redis in concurrent pipelines; every event is applied once, duplicates
// are caught across chunks, and a redelivery changes nothing.
func TestApplyManyUsers(t *testing.T) {
	srv := testredis.StartStandalone(t)
	ctx := context.Background()
	rdb := srv.Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
	users := 3*userChunk + 17
	var evs []events.Event
	for i := range users {
		u := fmt.Sprintf("u%d", i)
		evs = append(evs, view("a"+u, u, "p1", ts), view("b"+u, u, "p2", ts.Add(time.Second)))
	}
	recs, ranges := batchAt(0, evs...)
	if _, err := a.Apply(ctx, recs, ranges[:0]); err != nil { // user phase only: no global range
		t.Fatal(err)
	}
	// The same events again (a redelivery), plus a re-published duplicate of each first view.
	more := append(append([]events.Event{}, evs...), evs[0], evs[2*userChunk])
	recs, ranges = batchAt(0, more...)
	res, err := a.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range res.Outcomes {
		want := Applied
		if i >= len(evs) {
			want = Duplicate
		}
		if o != want {
			t.Fatalf("outcome %d = %v, want %v", i, o, want)
		}
	}
	day := ts.Format("2006-01-02")
	for _, i := range []int{0, userChunk, 2 * userChunk, users - 1} {
		if got := mustGet(t, rdb, fmt.Sprintf("st:{u:u%d}:views:%s", i, day)); got != "2" {
			t.Errorf("user u%d: views %s, want 2", i, got)
		}
	}
	if got := mustGet(t, rdb, "st:{g}:views:"+day); got != fmt.Sprint(2*users) {
		t.Errorf("global views %s, want %d", got, 2*users)
	}
}
