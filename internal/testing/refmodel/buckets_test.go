package refmodel

import (
	"math/rand/v2"
	"testing"
	"time"
)

// bruteEnd finds a bucket's end by walking minute by minute.
func bruteEnd(ts int64, loc *time.Location, layout string) int64 {
	own := label(ts, loc, layout)
	u := minuteEnd(ts)
	for label(u, loc, layout) == own {
		u += minute
	}
	return u
}

func TestBucketEndsMatchBruteForce(t *testing.T) {
	zones := []string{"UTC", "America/New_York", "Europe/London", "Asia/Kolkata", "Asia/Kathmandu",
		"Australia/Lord_Howe", "America/Santiago", "America/St_Johns", "Pacific/Chatham"}
	// Days around 2026 transitions of these zones, plus random instants.
	special := []string{"2026-03-08", "2026-11-01", "2026-03-29", "2026-10-25", "2026-04-05",
		"2026-10-04", "2026-04-04", "2026-09-05", "2026-09-06", "2026-09-27"}
	rng := rand.New(rand.NewPCG(1, 2))
	var instants []int64
	for _, d := range special {
		day, err := time.Parse(time.DateOnly, d)
		if err != nil {
			t.Fatal(err)
		}
		for range 40 {
			instants = append(instants, day.UnixMilli()-12*hour+rng.Int64N(48*hour))
		}
	}
	for range 200 {
		instants = append(instants, t0-400*day+rng.Int64N(800*day))
	}
	for _, name := range zones {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		for _, ts := range instants {
			if got, want := dayEnd(ts, loc), bruteEnd(ts, loc, dayLayout); got != want {
				t.Errorf("%s: day end of %s = %s, want %s", name, iso(ts, loc), iso(got, loc), iso(want, loc))
			}
			if got, want := hourEnd(ts, loc), bruteEnd(ts, loc, hourLayout); got != want {
				t.Errorf("%s: hour end of %s = %s, want %s", name, iso(ts, loc), iso(got, loc), iso(want, loc))
			}
			if got, want := minuteEnd(ts), bruteEnd(ts, loc, minuteLayout); got != want {
				t.Errorf("%s: minute end of %s = %s, want %s", name, iso(ts, loc), iso(got, loc), iso(want, loc))
			}
		}
	}
}

// TestBucketEndsAcrossDST pins the New York cases by hand.
func TestBucketEndsAcrossDST(t *testing.T) {
	ny := newYork(t)
	utc := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	cases := []struct {
		name     string
		end      func(int64, *time.Location) int64
		ts, want string
	}{
		// 01:30 EST on the spring-forward day: the hour ends at 03:00 EDT
		// (time.Date(..., 2, ...) would say 01:00 EST).
		{"hour before spring forward", hourEnd, "2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z"},
		{"day of spring forward", dayEnd, "2026-03-08T12:00:00Z", "2026-03-09T04:00:00Z"},
		// 01:30 EDT on the fall-back day: the label T01 runs until 02:00 EST.
		{"first 01 hour of fall back", hourEnd, "2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z"},
		{"day of fall back", dayEnd, "2026-11-01T12:00:00Z", "2026-11-02T05:00:00Z"},
		{"last ms of a day", dayEnd, "2026-03-02T04:59:59.999Z", "2026-03-02T05:00:00Z"},
		{"first ms of a day", dayEnd, "2026-03-02T05:00:00Z", "2026-03-03T05:00:00Z"},
	}
	for _, c := range cases {
		if got := c.end(utc(c.ts), ny); got != utc(c.want) {
			t.Errorf("%s: end of %s = %s, want %s", c.name, c.ts, iso(got, time.UTC), c.want)
		}
	}
	if got := label(utc("2026-11-01T06:30:00Z"), ny, hourLayout); got != "2026-11-01T01" {
		t.Errorf("second 01 hour labelled %s", got)
	}
}

func iso(ms int64, loc *time.Location) string {
	return time.UnixMilli(ms).In(loc).Format("2006-01-02T15:04:05.000Z07:00")
}
