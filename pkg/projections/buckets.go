package projections

import "time"

// Buckets are the calendar buckets of one instant in a time zone (docs/contract.md section 3).
type Buckets struct {
	Year, Month, Day, Hour, Minute string
	// DayEnd, HourEnd and MinuteEnd are the next calendar boundaries, Unix ms.
	DayEnd, HourEnd, MinuteEnd int64
}

// BucketsOf computes the buckets of the Unix-millisecond instant ts in loc.
func BucketsOf(ts int64, loc *time.Location) Buckets {
	t := time.UnixMilli(ts).In(loc)
	y, mo, d := t.Date()
	sinceHour := time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	sinceMinute := time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	return Buckets{
		Year:      t.Format("2006"),
		Month:     t.Format("2006-01"),
		Day:       t.Format("2006-01-02"),
		Hour:      t.Format("2006-01-02T15"),
		Minute:    t.Format("2006-01-02T15:04"),
		DayEnd:    time.Date(y, mo, d+1, 0, 0, 0, 0, loc).UnixMilli(),
		HourEnd:   t.Add(-sinceHour + time.Hour).UnixMilli(),
		MinuteEnd: t.Add(-sinceMinute + time.Minute).UnixMilli(),
	}
}
