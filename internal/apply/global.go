package apply

import (
	"context"
	"fmt"
	"strconv"
)

// applyGlobal applies the global writes of the applied events of a batch in one
// script, guarded by the per-partition watermarks, and moves the watermarks to
// the end of each range. When a watermark already lies inside a range (an
// earlier delivery applied part of it), those records are dropped and it tries again.
func (a *Applier) applyGlobal(ctx context.Context, done []*item, ranges []Range, wms map[string]string, held holds, heldRaw []string, res *Result) error {
	rs := make([]Range, 0, len(ranges))
	for _, r := range ranges {
		if wm, ok := wms[tpField(r.Topic, r.Partition)]; ok {
			if w, err := strconv.ParseInt(wm, 10, 64); err == nil {
				if w >= r.Last {
					continue
				}
				r.First = max(r.First, w+1)
			}
		}
		rs = append(rs, r)
	}
	wmKey := a.wmKey()
	for len(rs) > 0 {
		floor := map[string]int64{}
		for _, r := range rs {
			floor[tpField(r.Topic, r.Partition)] = r.First
		}
		total := 0
		for _, it := range done {
			total += len(it.global)
		}
		c := newCoalescer(total)
		for _, it := range done {
			tp := tpField(it.rec.Topic, it.rec.Partition)
			if f, ok := floor[tp]; ok && it.rec.Offset >= f {
				for i := range it.global {
					if !held.skip(&it.global[i], tp, it.rec.Offset) {
						c.add(&it.global[i])
					}
				}
			}
		}
		ws := c.out
		args := make([]any, 0, 3+3*len(rs)+9*len(ws))
		mode := "g"
		if a.opts.GapCheck {
			mode = "G"
		}
		args = append(args, mode, wmKey, strconv.Itoa(len(rs)))
		for _, r := range rs {
			args = append(args, tpField(r.Topic, r.Partition), strconv.FormatInt(r.First, 10), strconv.FormatInt(r.Last, 10))
		}
		args = append(args, strconv.Itoa(len(heldRaw)/2))
		for _, v := range heldRaw {
			args = append(args, v)
		}
		args = appendWrites(args, ws)
		res.GlobalCalls++
		keys := []string{wmKey, a.keys.Meta()}
		if a.opts.IgnoreMeta {
			keys = keys[:1]
		}
		vals, err := a.script.Run(ctx, a.rdb, keys, args...).Slice()
		if err != nil {
			return fmt.Errorf("apply global writes: %w", err)
		}
		if ok, _ := vals[0].(int64); ok == -2 {
			return errHoldsChanged
		}
		if ok, _ := vals[0].(int64); ok == -3 {
			return gapsOf(vals, args[1:], "")
		}
		if ok, _ := vals[0].(int64); ok == -1 {
			status, _ := vals[1].(string)
			return &NotReadyError{Status: status}
		}
		if ok, _ := vals[0].(int64); ok == 1 {
			if len(vals) > 1 {
				n, _ := vals[1].(int64)
				res.Writes += n
			}
			return nil
		}
		var next []Range
		hit := map[int]int64{}
		for j := 1; j+1 < len(vals); j += 2 {
			idx, _ := vals[j].(int64)
			wm, err := strconv.ParseInt(fmt.Sprint(vals[j+1]), 10, 64)
			if err != nil || idx < 1 || int(idx) > len(rs) {
				return fmt.Errorf("apply global writes: bad watermark reply %v", vals)
			}
			hit[int(idx-1)] = wm
		}
		for j, r := range rs {
			if wm, ok := hit[j]; ok {
				if wm >= r.Last {
					continue
				}
				r.First = wm + 1
			}
			next = append(next, r)
		}
		rs = next
	}
	return nil
}
