package coord

import (
	"sort"
	"strconv"
	"strings"

	"projector/pkg/projections"
)

// A replayer rebuilding a projection P while consumers run sets the meta
// field hold:P; the consumers leave P's writes out, user and global alike.
// Its value is HoldAll (consumers leave P out entirely) or, for a rebuild of
// global projections by a hold, HoldUpTo(offsets): consumers leave P out
// for records at or below the offset of their partition and write it for
// later ones. The apply script completes a batch only if the holds it was
// planned with are still the ones in the meta hash.

// HoldAll is the hold value that leaves a projection out for every record.
const HoldAll = "*"

// HoldPrefix starts the meta fields naming held projections.
const HoldPrefix = "hold:"

// HoldField is the meta field of projection name's hold.
func HoldField(name string) string { return HoldPrefix + name }

// HoldUpTo encodes a hold up to an offset per "topic:partition".
func HoldUpTo(upTo map[string]int64) string {
	parts := make([]string, 0, len(upTo))
	for f, o := range upTo {
		parts = append(parts, f+"="+strconv.FormatInt(o, 10))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Holds are the parsed hold fields: projection -> partition -> last held
// offset (a nil map holds every record).
type Holds map[string]map[string]int64

// parseHolds reads the holds of the meta hash's fields, and the hold fields
// as raw (field, value) pairs for the apply script to verify.
func parseHolds(fields map[string]string) (Holds, []string) {
	h := Holds{}
	var raw []string
	for f, v := range fields {
		name, ok := strings.CutPrefix(f, HoldPrefix)
		if !ok {
			continue
		}
		raw = append(raw, f, v)
		if v == HoldAll {
			h[name] = nil
			continue
		}
		upTo := map[string]int64{}
		for _, part := range strings.Split(v, ",") {
			i := strings.LastIndexByte(part, '=')
			if i < 0 {
				continue
			}
			if o, err := strconv.ParseInt(part[i+1:], 10, 64); err == nil {
				upTo[part[:i]] = o
			}
		}
		h[name] = upTo
	}
	return h, raw
}

// Names lists the held projections, sorted.
func (h Holds) Names() []string {
	out := make([]string, 0, len(h))
	for n := range h {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Keep compacts ws to the writes not held for a record at offset of
// partition tp (ws itself when none is held).
func (h Holds) Keep(ws []projections.Write, tp string, offset int64) []projections.Write {
	if len(h) == 0 {
		return ws
	}
	n := 0
	for i := range ws {
		if !h.Skip(&ws[i], tp, offset) {
			if n != i {
				ws[n] = ws[i]
			}
			n++
		}
	}
	return ws[:n:n]
}

// Skip reports whether a write of a record at offset of partition tp is held.
func (h Holds) Skip(w *projections.Write, tp string, offset int64) bool {
	upTo, held := h[w.Projection]
	if !held {
		return false
	}
	if upTo == nil {
		return true
	}
	last, ok := upTo[tp]
	return !ok || offset <= last
}
