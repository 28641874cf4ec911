package status

import (
	"strings"
	"time"

	"projector/internal/coord"
)

// Rebuild is one projection being rebuilt and the replayer's progress, as
// px:meta:{g} says (coord.State.Rebuilding and Progress).
type Rebuild struct {
	Projection string `json:"projection"`
	// Done and Total count records of the replay's plan.
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
	// Percent is Done of Total (0-100).
	Percent float64 `json:"percent"`
	// Rate is the replayer's records per second.
	Rate int64 `json:"rate"`
	// ETASeconds is the time left at Rate; -1 when unknown.
	ETASeconds int64 `json:"eta_seconds"`
	// UpdatedMs is when the replayer last wrote its progress (Unix ms; 0: never).
	UpdatedMs int64 `json:"updated_ms"`
	// Stalled says the replayer has not written its progress for longer
	// than StallAfter (it died; a rerun of the same command continues it).
	Stalled bool `json:"stalled"`
}

// StallAfter is how long a rebuild's progress may stay unchanged before it
// counts as stalled: a live replayer writes it every second.
const StallAfter = 15 * time.Second

// rebuilds reads the projections being rebuilt and their progress from the
// meta hash, as of now.
func rebuilds(st coord.State, now time.Time) []Rebuild {
	out := []Rebuild{}
	p := st.Progress()
	for _, n := range st.Rebuilding() {
		r := Rebuild{Projection: strings.TrimSpace(n), Done: p.Done, Total: p.Total, Rate: p.Rate, UpdatedMs: p.UpdatedMs, ETASeconds: -1}
		if r.Total > 0 {
			r.Percent = 100 * float64(r.Done) / float64(r.Total)
		}
		if r.Rate > 0 {
			r.ETASeconds = (max(r.Total-r.Done, 0) + r.Rate - 1) / r.Rate
		}
		r.Stalled = r.UpdatedMs > 0 && now.UnixMilli()-r.UpdatedMs > StallAfter.Milliseconds()
		out = append(out, r)
	}
	return out
}
