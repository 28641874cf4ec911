package refmodel

import "time"

// Calendar bucket labels of docs/contract.md section 3.
const (
	yearLayout   = "2006"
	monthLayout  = "2006-01"
	dayLayout    = "2006-01-02"
	hourLayout   = "2006-01-02T15"
	minuteLayout = "2006-01-02T15:04"
)

// grid is the spacing on which every zone's bucket boundaries lie: since 2000
// every UTC offset is a whole multiple of 15 minutes.
const grid = 15 * time.Minute

// label returns the bucket of ts (Unix ms) in loc with the given layout.
func label(ts int64, loc *time.Location, layout string) string {
	return time.UnixMilli(ts).In(loc).Format(layout)
}

// bucketEnd returns the end, in Unix ms, of the bucket (named by layout) that
// contains ts: the first instant after ts whose label differs. guess is the
// answer time.Date gives from the wall clock; it is right when no UTC offset
// change lies between ts and guess and its label differs. Otherwise (time.Date picks an arbitrary
// side of a wall time that does not exist, and labels may repeat) the end is
// found by walking forward on the 15-minute grid.
func bucketEnd(ts int64, loc *time.Location, layout string, guess time.Time) int64 {
	t := time.UnixMilli(ts).In(loc)
	own := t.Format(layout)
	_, zoneEnd := t.ZoneBounds()
	sameZone := zoneEnd.IsZero() || guess.Before(zoneEnd)
	if guess.After(t) && sameZone && guess.In(loc).Format(layout) != own {
		return guess.UnixMilli()
	}
	end := t.Truncate(grid).Add(grid)
	for end.In(loc).Format(layout) == own {
		end = end.Add(grid)
	}
	return end.UnixMilli()
}

// dayEnd returns the next local midnight after ts, in Unix ms.
func dayEnd(ts int64, loc *time.Location) int64 {
	l := time.UnixMilli(ts).In(loc)
	return bucketEnd(ts, loc, dayLayout, time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, loc))
}

// hourEnd returns the end of ts's local hour bucket, in Unix ms.
func hourEnd(ts int64, loc *time.Location) int64 {
	l := time.UnixMilli(ts).In(loc)
	return bucketEnd(ts, loc, hourLayout, time.Date(l.Year(), l.Month(), l.Day(), l.Hour()+1, 0, 0, 0, loc))
}

// minuteEnd returns the end of ts's minute, in Unix ms (every offset is a
// whole number of minutes, so minutes end on the UTC minute grid).
func minuteEnd(ts int64) int64 {
	const minute = int64(time.Minute / time.Millisecond)
	return (ts/minute + 1) * minute
}
