package query

import (
	"slices"
	"strconv"
	"time"

	"projector/pkg/projections"
)

// Granularities from the coarsest to the finest (docs/contract.md section 4 stats).
var Granularities = []string{"year", "month", "day", "hour"}

// maxPoints bounds the series of a stats read per granularity.
var maxPoints = map[string]int{"year": 100, "month": 240, "day": 732, "hour": 744}

// minLength is the shortest bucket of each granularity (a day is 23 hours
// when daylight saving time starts), to bound a range before walking it.
var minLength = map[string]time.Duration{"year": 365 * 24 * time.Hour, "month": 28 * 24 * time.Hour,
	"day": 23 * time.Hour, "hour": time.Hour}

// bucket is one calendar bucket of a granularity in a time zone.
type bucket struct {
	label      string // as in key names: 2026, 2026-12, 2026-12-02, 2026-12-02T08
	start, end int64  // Unix ms, end exclusive
}

// bucketAt returns the bucket of granularity g holding ts.
func bucketAt(g string, ts int64, loc *time.Location) bucket {
	b := projections.BucketsOf(ts, loc)
	t := time.UnixMilli(ts).In(loc)
	y, m, _ := t.Date()
	switch g {
	case "year":
		return bucket{b.Year, time.Date(y, 1, 1, 0, 0, 0, 0, loc).UnixMilli(), time.Date(y+1, 1, 1, 0, 0, 0, 0, loc).UnixMilli()}
	case "month":
		return bucket{b.Month, time.Date(y, m, 1, 0, 0, 0, 0, loc).UnixMilli(), time.Date(y, m+1, 1, 0, 0, 0, 0, loc).UnixMilli()}
	case "day":
		return bucket{b.Day, dayStart(t), b.DayEnd}
	default:
		return bucket{b.Hour, b.HourEnd - time.Hour.Milliseconds(), b.HourEnd}
	}
}

// dayStart is local midnight of t's day.
func dayStart(t time.Time) int64 {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location()).UnixMilli()
}

// aligned reports whether ts starts a bucket of granularity g.
func aligned(g string, ts int64, loc *time.Location) bool {
	return bucketAt(g, ts, loc).start == ts
}

// walk returns the buckets of granularity g covering [from, to), from and
// to aligned to g. A label seen twice in a row (an hour repeated when
// daylight saving time ends) is listed once: both hours share one key.
func walk(g string, from, to int64, loc *time.Location) []bucket {
	var out []bucket
	for t := from; t < to; {
		b := bucketAt(g, t, loc)
		if n := len(out); n > 0 && out[n-1].label == b.label {
			out[n-1].end = b.end
		} else {
			out = append(out, b)
		}
		t = b.end
	}
	return out
}

// cover splits [from, to) into the coarsest buckets of the enabled
// granularities: at each point the coarsest bucket that starts there and
// ends by to. from and to must be aligned to the finest enabled granularity
// used by the caller, so cover always progresses.
func cover(enabled []string, from, to int64, loc *time.Location) []coverPart {
	var out []coverPart
	for t := from; t < to; {
		found := false
		for _, g := range Granularities {
			if !slices.Contains(enabled, g) {
				continue
			}
			b := bucketAt(g, t, loc)
			if b.start == t && b.end <= to {
				if n := len(out); n > 0 && out[n-1].g == g && out[n-1].b.label == b.label {
					out[n-1].b.end = b.end
				} else {
					out = append(out, coverPart{g, b})
				}
				t, found = b.end, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return out
}

// coverPart is one bucket of a cover with its granularity.
type coverPart struct {
	g string
	b bucket
}

// timeLayouts are the bucket label formats of docs/contract.md section 3 accepted by
// ParseTime, read in the configured time zone.
var timeLayouts = []string{"2006", "2006-01", "2006-01-02", "2006-01-02T15"}

// ParseTime parses a range bound: a bucket label (2026, 2026-12,
// 2026-12-02 or 2026-12-02T08, the start of that bucket in loc), an RFC 3339
// time or Unix milliseconds. ok is false when s is none of these.
func ParseTime(s string, loc *time.Location) (t time.Time, ok bool) {
	for _, l := range timeLayouts {
		if len(s) == len(l) {
			if t, err := time.ParseInLocation(l, s, loc); err == nil {
				return t, true
			}
		}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && len(s) > 4 {
		return time.UnixMilli(ms), true
	}
	return time.Time{}, false
}
