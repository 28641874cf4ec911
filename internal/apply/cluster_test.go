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

// On Redis Cluster every script touches one slot: users spread over the masters.
func TestApplyOnCluster(t *testing.T) {
	c := testredis.StartCluster(t, 3)
	ctx := context.Background()
	rdb := c.Client()
	cfg := projections.Defaults()
	cfg.History.Scope = []string{"device", "store"}
	a := newTestApplier(t, rdb, cfg)
	ts := testNow.Add(-time.Hour)
	var evs []events.Event
	for i := 0; i < 30; i++ {
		evs = append(evs, view(fmt.Sprintf("e%d", i), fmt.Sprintf("u%d", i), "p1", ts))
	}
	evs = append(evs, events.Event{ID: "c1", Type: events.HistoryCleared, TS: ts.UnixMilli(), UserID: "u1"})
	recs, ranges := batchAt(0, evs...)
	res, err := a.Apply(ctx, recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range res.Outcomes {
		if o != Applied {
			t.Errorf("outcome %d = %v", i, o)
		}
	}
	if got := mustGet(t, rdb, "st:{g}:views:2026"); got != "30" {
		t.Errorf("global views = %s, want 30", got)
	}
	if n := rdb.Exists(ctx, "hist:{u:u1}:-:-").Val(); n != 0 {
		t.Errorf("cleared scoped history still exists")
	}
}
