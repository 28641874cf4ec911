package projections

import "projector/pkg/events"

// lastViewed maintains `lv:{u:<user>}`: the newest Size products a user viewed.
type lastViewed struct {
	cfg     LastViewedConfig
	keys    Keys
	guarded bool // history is on: views at or before histclr are ignored
}

func (lastViewed) Name() string { return "last_viewed" }

func (p lastViewed) Plan(in *Input, out []Write) []Write {
	ev := &in.Event
	key := p.keys.LastViewed(ev.UserID)
	switch ev.Type {
	case events.View:
		ttl := ms(p.cfg.TTL)
		if !in.alive(ev.TS + ttl) {
			return out
		}
		w := Write{Kind: ZAddMax, Key: key, Member: ev.ProductID, Score: ev.TS, ExpireAt: ev.TS + ttl,
			Trim: Trim{Keep: p.cfg.Size, RetentionMs: ttl}}
		if p.guarded {
			w.Guard = in.histClr(p.keys)
		}
		out = append(out, w)
	case events.HistoryCleared:
		out = append(out, Write{Kind: ZRemUpTo, Key: key, Score: ev.TS})
	case events.HistoryItemRemoved:
		out = append(out, Write{Kind: ZRemMemberUpTo, Key: key, Member: ev.ProductID, Score: ev.TS})
	}
	return out
}
