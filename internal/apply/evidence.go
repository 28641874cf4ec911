package apply

import (
	"context"
	"sort"
)

// Evidence is what Redis holds as applied, per "topic:partition": the last
// offset of the global watermarks and, on Redis Cluster, of each master's own.
type Evidence struct {
	Global map[string]int64
	// Nodes maps a master's address to its watermarks.
	Nodes map[string]map[string]int64
}

// Lowest returns, for field, the lowest offset any watermark holds, and
// where ("" for the global ones); ok is false when none holds the field.
func (e Evidence) Lowest(field string) (off int64, node string, ok bool) {
	if v, has := e.Global[field]; has {
		off, ok = v, true
	}
	addrs := make([]string, 0, len(e.Nodes))
	for a := range e.Nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		if v, has := e.Nodes[a][field]; has && (!ok || v < off) {
			off, node, ok = v, a, true
		}
	}
	return off, node, ok
}

// precheck fails with a *GapError, before anything is written, when a
// watermark (wms, the global ones, or a master's own) lies below a range's
// first offset - 1: the records before the batch must be applied again
// first, since not every write commutes (a history_item_removed applied
// before the view it removes would leave the view behind).
func (m *masterWatermarks) precheck(ctx context.Context, ranges []Range, wms map[string]string) error {
	ev := Evidence{Global: parseOffsets(wms)}
	var err error
	if ev.Nodes, err = m.read(ctx); err != nil {
		return err
	}
	ge := &GapError{}
	for _, r := range ranges {
		f := r.TP().String()
		if low, node, ok := ev.Lowest(f); ok && low < r.First-1 {
			ge.Gaps = append(ge.Gaps, Gap{Topic: r.Topic, Partition: r.Partition, Applied: low, Node: node})
		}
	}
	if len(ge.Gaps) > 0 {
		return ge
	}
	return nil
}
