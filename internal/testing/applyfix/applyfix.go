// Package applyfix holds the fixtures that the tests of the apply engine
// and of the replayer's appliers share: the test clock, events and batches
// of records. It imports no applier, so that every package's own tests can
// use it.
package applyfix

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/offsets"
	"projector/pkg/events"
)

// Now is noon (UTC) of the day the tests run: Redis expires keys by its own
// clock, so event times must be recent for keys with short TTLs. Day and
// Month are its calendar buckets.
var (
	Now   = time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)
	Day   = Now.Format("2006-01-02")
	Month = Now.Format("2006-01")
)

// View is a view event of user and product at ts.
func View(id, user, product string, ts time.Time) events.Event {
	return events.Event{ID: id, Type: events.View, TS: ts.UnixMilli(), UserID: user, ProductID: product, Device: "-", StoreID: "-"}
}

// BatchAt places events at consecutive offsets of partition 0 of
// shop.views, from first, and returns them with their range.
func BatchAt(first int64, evs ...events.Event) ([]offsets.Record, []offsets.Range) {
	recs := make([]offsets.Record, len(evs))
	for i, ev := range evs {
		recs[i] = offsets.Record{Topic: "shop.views", Partition: 0, Offset: first + int64(i), Event: ev}
	}
	return recs, []offsets.Range{{Topic: "shop.views", Partition: 0, First: first, Last: first + int64(len(evs)) - 1}}
}

// MustGet reads a string key, failing the test when it cannot.
func MustGet(t *testing.T, rdb redis.UniversalClient, key string) string {
	t.Helper()
	v, err := rdb.Get(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v
}
