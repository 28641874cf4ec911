package sizing

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// markerSlack is how long past the idempotency window a marker key may
// live and still count as kept "about as long as the window".
const markerSlack = time.Hour

// Result is one measured scenario: the memory before and after Load.
type Result struct {
	Scenario      Scenario
	Applied       Applied
	Before, After Snapshot
}

// Per returns the bytes of class c per unit: per active user (PerUser), per
// day of traffic (Global), per applied event (Markers), or the plain total
// (Bookkeeping).
func (r Result) Per(c Class) float64 {
	return per(r.After.Total(c).Bytes, r.unit(c))
}

// unit is the divisor of class c.
func (r Result) unit(c Class) int {
	switch c {
	case PerUser:
		return r.Applied.Users
	case Global:
		return r.Scenario.Days
	case Markers:
		return r.Applied.Events
	}
	return 1
}

// unitName names the divisor of class c.
func unitName(c Class) string {
	switch c {
	case PerUser:
		return "B/user"
	case Global:
		return "B/day"
	case Markers:
		return "B/event"
	}
	return "B"
}

// MarkerLife sums the marker keys' bytes by remaining time to live: those
// that live at most window + slack, the others (beyond), and the longest
// time to live of any (a key without expiry counts as beyond).
func (r Result) MarkerLife(slack time.Duration) (within, beyond int64, longest time.Duration) {
	limit := r.Scenario.window() + slack
	for _, k := range r.After.Markers {
		if k.TTL >= 0 && k.TTL <= limit {
			within += k.Bytes
		} else {
			beyond += k.Bytes
		}
		longest = max(longest, k.TTL)
	}
	return within, beyond, longest
}

// UsedDelta is the growth of used_memory.
func (r Result) UsedDelta() int64 { return r.After.UsedMemory - r.Before.UsedMemory }

func per(n int64, d int) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// Format writes the scenario, used_memory and a table of the families.
func Format(w io.Writer, r Result) error {
	sc, ap := r.Scenario, r.Applied
	ids := "short ids"
	if sc.UUIDs {
		ids = "36-character ids"
	}
	fmt.Fprintf(w, "scenario: %d users, %d products, %d records/user/day, %d day(s), %s, idempotency.window %v: %d records (%d poison), %d events applied, %d duplicates, %d active users\n",
		sc.Users, sc.Products, sc.EventsPerUserDay, sc.Days, ids, sc.window(), ap.Records, ap.Poison, ap.Events, ap.Duplicates, ap.Users)
	within, beyond, longest := r.MarkerLife(markerSlack)
	fmt.Fprintf(w, "markers: %.1f B/event; %.0f%% of their bytes in keys living past window + %v, the longest %v\n",
		r.Per(Markers), 100*per(beyond, int(max(within+beyond, 1))), markerSlack, longest.Round(time.Minute))
	fmt.Fprintf(w, "used_memory: before %d, after %d, growth %d bytes (%.0f B/user, %.0f B/event)\n",
		r.Before.UsedMemory, r.After.UsedMemory, r.UsedDelta(), per(r.UsedDelta(), ap.Users), per(r.UsedDelta(), ap.Events))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "family\tclass\tkeys\tbytes\tB/key\tper unit\tunit\t")
	names := make([]string, 0, len(r.After.Families))
	for name := range r.After.Families {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		ca, cb := r.After.Families[a].Class, r.After.Families[b].Class
		if ca != cb {
			return int(ca) - int(cb)
		}
		return cmp.Compare(r.After.Families[b].Bytes, r.After.Families[a].Bytes)
	})
	row := func(name string, u Usage) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%.1f\t%s\t\n", name, u.Class, u.Keys, u.Bytes,
			per(u.Bytes, int(u.Keys)), per(u.Bytes, r.unit(u.Class)), unitName(u.Class))
	}
	for _, name := range names {
		row(name, r.After.Families[name])
	}
	for _, c := range []Class{PerUser, Global, Markers, Bookkeeping} {
		row("total", r.After.Total(c))
	}
	return tw.Flush()
}
