package projections

import (
	"time"

	"projector/pkg/events"
)

// history maintains `hist:{u:<user>}` (optionally per device and store) with one
// entry per product per day, and `histclr:{u:<user>}`, the latest clear.
type history struct {
	cfg      HistoryConfig
	keys     Keys
	clearTTL time.Duration // the longer of the history and last-viewed retentions
}

func (history) Name() string { return "history" }

func (p history) Plan(in *Input, out []Write) []Write {
	ev := &in.Event
	scoped := p.cfg.Scoped()
	var registry string
	if scoped {
		registry = p.keys.HistoryRegistry(ev.UserID)
	}
	switch ev.Type {
	case events.View:
		ret := ms(p.cfg.Retention)
		if !in.alive(ev.TS + ret) {
			return out
		}
		key := p.keys.History(ev.UserID, ev.Device, ev.StoreID, scoped)
		if scoped {
			out = append(out, Write{Kind: SAdd, Key: registry, Member: key, ExpireAt: ev.TS + ret})
		}
		out = append(out, Write{Kind: ZAddMax, Key: key, Member: ev.ProductID + "@" + in.Buckets.Day,
			Score: ev.TS, ExpireAt: ev.TS + ret, Trim: Trim{Keep: p.cfg.Size, RetentionMs: ret},
			Guard: in.histClr(p.keys)})
	case events.HistoryCleared:
		if exp := ev.TS + ms(p.clearTTL); in.alive(exp) {
			out = append(out, Write{Kind: SetMax, Key: p.keys.HistoryCleared(ev.UserID), Score: ev.TS, ExpireAt: exp})
		}
		out = append(out, Write{Kind: ZRemUpTo, Key: p.keys.History(ev.UserID, "", "", false), Registry: registry, Score: ev.TS})
	case events.HistoryItemRemoved:
		out = append(out, Write{Kind: ZRemPrefixUpTo, Key: p.keys.History(ev.UserID, "", "", false), Registry: registry,
			Member: ev.ProductID + "@", Score: ev.TS})
	}
	return out
}
