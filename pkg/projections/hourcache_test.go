package projections

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The hour cache must give exactly BucketsOf's buckets, in zones with
// daylight-saving shifts of an hour and of 30 minutes and with offsets of
// 30 and 45 minutes, for instants in random order and in sequence.
func TestCachedBucketsEqualBucketsOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"UTC", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "Asia/Kathmandu", "Europe/Dublin"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlanner(Defaults(), loc, "")
		if err != nil {
			t.Fatal(err)
		}
		lo := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
		span := int64(365 * 24 * time.Hour / time.Millisecond)
		ts := lo
		for i := range 100_000 {
			if i%20 == 0 {
				ts = lo + rng.Int64N(span)
			} else {
				ts += rng.Int64N(3 * minuteMs)
			}
			if got, _, _ := p.buckets(ts); got != BucketsOf(ts, loc) {
				want := BucketsOf(ts, loc)
				t.Fatalf("%s: buckets(%d) = %+v, want %+v", name, ts, got, want)
			}
		}
		used := 0
		for i := range p.hours {
			if p.hours[i].Load() != nil {
				used++
			}
		}
		if used == 0 {
			t.Fatalf("%s: the cache was never used", name)
		}
	}
}
