package api

import (
	"context"
	"errors"
	"time"

	"projector/pkg/query"
)

// Overview holds the dashboard's counters: today's totals and the last 24
// hours per hour, for every stat, global.
type Overview struct {
	// Now is the server clock, Unix ms; Day today's bucket.
	Now      int64  `json:"now"`
	TimeZone string `json:"time_zone"`
	Day      string `json:"day"`
	// Today maps each stat to today's global total.
	Today map[string]int64 `json:"today"`
	// Hourly maps each stat to the last 24 hours (absent when hour stats
	// are switched off).
	Hourly map[string][]query.StatsPoint `json:"hourly,omitempty"`
}

// overview reads today's totals and the hourly series (two MGETs per stat).
func (h *handler) overview(ctx context.Context) (Overview, error) {
	loc := h.opts.Location
	now := h.opts.Now().In(loc)
	y, m, d := now.Date()
	dayStart := time.Date(y, m, d, 0, 0, 0, 0, loc)
	hourStart := time.Date(y, m, d, now.Hour(), 0, 0, 0, loc)
	o := Overview{Now: now.UnixMilli(), TimeZone: loc.String(), Day: dayStart.Format("2006-01-02"),
		Today: map[string]int64{}, Hourly: map[string][]query.StatsPoint{}}
	for _, stat := range query.Stats {
		day, err := h.stats(ctx, stat, dayStart, dayStart.AddDate(0, 0, 1), "day")
		if err != nil {
			return o, err
		}
		if day != nil {
			o.Today[stat] = day.Total
		}
		hours, err := h.stats(ctx, stat, hourStart.Add(-23*time.Hour), hourStart.Add(time.Hour), "hour")
		if err != nil {
			return o, err
		}
		if hours != nil {
			o.Hourly[stat] = hours.Series
		}
	}
	return o, nil
}

// stats reads one global series; nil without error when stats or the
// granularity are switched off.
func (h *handler) stats(ctx context.Context, stat string, from, to time.Time, g string) (*query.StatsResult, error) {
	res, err := h.opts.Reader.Stats(ctx, query.StatsQuery{Stat: stat, From: from, To: to, Granularity: g})
	var ie *query.InputError
	if errors.Is(err, query.ErrDisabled) || errors.As(err, &ie) && ie.Param == "granularity" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}
