package projections

import (
	"fmt"
	"sync/atomic"
	"time"
)

// hourBuckets holds the buckets shared by every instant of one local hour,
// so that planning events of the same hour formats no dates.
type hourBuckets struct {
	start, end int64   // the hour is [start, end), Unix ms
	b          Buckets // Minute and MinuteEnd left empty
	minutes    [60]string
	keys       [][]string // per projection of the planner's order: its hour keys (nil: none)
}

// hourKeyer is a projection whose keys depend only on the hour's buckets
// (global keys): the planner builds them once per cached hour, and Plan
// finds them with Input.hourKeys.
type hourKeyer interface {
	hourKeys(h *hourBuckets) []string
}

// setHourKeys builds the hour keys of every projection of order that has them.
func (h *hourBuckets) setHourKeys(order []Projection) {
	h.keys = make([][]string, len(order))
	for j, pr := range order {
		if hk, ok := pr.(hourKeyer); ok {
			h.keys[j] = hk.hourKeys(h)
		}
	}
}

const (
	minuteMs = int64(time.Minute / time.Millisecond)
	hourMs   = int64(time.Hour / time.Millisecond)
)

// newHourBuckets returns the cache entry of the local hour holding ts, or
// nil when that hour is not 60 whole, contiguous minutes (a daylight-saving
// shift inside it, an offset with seconds): then BucketsOf is used directly.
func newHourBuckets(ts int64, loc *time.Location) *hourBuckets {
	b := BucketsOf(ts, loc)
	start := b.HourEnd - hourMs
	if start%minuteMs != 0 {
		return nil
	}
	first, last := BucketsOf(start, loc), BucketsOf(b.HourEnd-1, loc)
	if first.Hour != b.Hour || last.Hour != b.Hour || first.HourEnd != b.HourEnd || last.HourEnd != b.HourEnd ||
		first.Day != b.Day || last.Day != b.Day || first.Minute != b.Hour+":00" || last.Minute != b.Hour+":59" {
		return nil
	}
	h := &hourBuckets{start: start, end: b.HourEnd, b: b}
	h.b.Minute, h.b.MinuteEnd = "", 0
	for m := range h.minutes {
		h.minutes[m] = fmt.Sprintf("%s:%02d", b.Hour, m)
	}
	return h
}

// hourSlots is the number of hours cached: a batch mixes partitions and
// out-of-order events, so its events fall into a few different hours.
const hourSlots = 8

// hourCache holds the buckets of recently planned hours, each in the slot of
// its UTC hour number (entries are immutable; slots are replaced whole).
type hourCache [hourSlots]atomic.Pointer[hourBuckets]

// Buckets returns BucketsOf(ts, loc) for the planner's time zone loc, from
// the cache of recently planned hours when it can.
func (p *Planner) Buckets(ts int64) Buckets {
	b, _, _ := p.buckets(ts)
	return b
}

// Location is the planner's time zone.
func (p *Planner) Location() *time.Location { return p.loc }

// buckets returns BucketsOf(ts, p.loc), from the cached hour when ts lies
// in it, with that hour (nil when it is not cached) and the minute's index
// in it.
func (p *Planner) buckets(ts int64) (Buckets, *hourBuckets, int32) {
	slot := &p.hours[uint64(ts/hourMs)%hourSlots]
	if h := slot.Load(); h != nil && ts >= h.start && ts < h.end {
		m := (ts - h.start) / minuteMs
		b := h.b
		b.Minute = h.minutes[m]
		b.MinuteEnd = h.start + (m+1)*minuteMs
		return b, h, int32(m)
	}
	if h := newHourBuckets(ts, p.loc); h != nil {
		h.setHourKeys(p.order)
		slot.Store(h)
	}
	return BucketsOf(ts, p.loc), nil, 0
}
