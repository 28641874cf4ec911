package status

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Rebuild is one projection being rebuilt and the replayer's progress, from
// the fields of px:meta:{g} (docs/contract.md section 9): the projections
// are those of `rebuild` (a rebuild next to running consumers) or, with
// status rebuilding (a replay after data loss), of the recorded
// `replay_plan` ("all" before a plan is recorded); the progress is
// `rebuild_done`, `rebuild_total`, `rebuild_rate` and `rebuild_updated_ms`.
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
func rebuilds(meta map[string]string, now time.Time) []Rebuild {
	var names []string
	if v := meta["rebuild"]; v != "" {
		names = strings.Split(v, ",")
	} else if meta["status"] == "rebuilding" {
		var plan struct {
			Projections []string `json:"projections"`
		}
		if json.Unmarshal([]byte(meta["replay_plan"]), &plan) == nil && len(plan.Projections) > 0 {
			names = plan.Projections
		} else {
			names = []string{"all"}
		}
	}
	out := []Rebuild{}
	num := func(f string) int64 { n, _ := strconv.ParseInt(meta[f], 10, 64); return n }
	for _, n := range names {
		r := Rebuild{Projection: strings.TrimSpace(n), Done: num("rebuild_done"), Total: num("rebuild_total"),
			Rate: num("rebuild_rate"), UpdatedMs: num("rebuild_updated_ms"), ETASeconds: -1}
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
