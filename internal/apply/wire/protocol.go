// Package wire is the protocol between projector's appliers and Redis: the
// apply and seal scripts (apply.lua, seal.lua) and the one definition of
// their modes, write kinds and reply codes that both the Go side and the
// scripts' rendered header use, the encoding of write programs and
// markers, the decoding of replies, and calling the scripts (EVALSHA, EVAL
// after NOSCRIPT). The apply script holds every rule of how a write
// changes Redis; Unguarded calls it without markers.
package wire

import (
	"fmt"
	"strconv"
	"strings"

	"projector/internal/coord"
	"projector/pkg/projections"
)

// The protocol of the apply script (apply.lua) and the seal script is
// defined here once: the modes a call runs in, the codes of the write kinds
// and the codes of the replies. The scripts are built as luaHeader() + body,
// so the Lua side names these values only through the locals the header
// declares (MODE_USER, KIND_ZADDMAX, REPLY_GAP, ...), and every reply is
// decoded by DecodeReply.

// Mode is what one call of the apply script does (its ARGV[1]).
type Mode string

// The modes of the apply script. An unknown mode is an error of the script.
const (
	// ModeUser: the idempotency markers of a user's records guard the
	// user's writes; they are set when none exists, with the writes.
	ModeUser Mode = "u"
	// ModeUsers: several users' ModeUser calls in one (a standalone
	// server: the keys of a call need not share a slot); each user's
	// markers guard only that user's writes.
	ModeUsers Mode = "U"
	// ModeGlobal: the partitions' watermarks guard the global writes and
	// move to the end of the batch's ranges.
	ModeGlobal Mode = "g"
	// ModeGlobalGaps is ModeGlobal that also refuses a batch when a
	// watermark lies below a range's first offset - 1 (a gap). The seal
	// script takes the same two modes.
	ModeGlobalGaps Mode = "G"
)

// Arg is m as a script argument.
func (m Mode) Arg() any { return string(m) }

// modes lists every mode with its Lua name.
var modes = []struct {
	lua string
	m   Mode
}{{"MODE_USER", ModeUser}, {"MODE_USERS", ModeUsers}, {"MODE_GLOBAL", ModeGlobal}, {"MODE_GLOBAL_GAPS", ModeGlobalGaps}}

// ReplyCode is the first element of every reply of the apply and seal scripts.
type ReplyCode int64

// The reply codes.
const (
	// ReplyApplied: {1, writes applied}.
	ReplyApplied ReplyCode = 1
	// ReplyFound: {0, i1, v1, i2, v2, ...}: guards were found and nothing
	// was written; i is the 1-based position of a marker (v its stored
	// origin) or of a range (v its stored watermark).
	ReplyFound ReplyCode = 0
	// ReplyNotReady: {-1, status}: the meta hash is missing ("") or its
	// status is neither ready nor paused; nothing was written.
	ReplyNotReady ReplyCode = -1
	// ReplyHoldsChanged: {-2}: the meta hash holds other holds than the
	// batch was planned with; nothing was written.
	ReplyHoldsChanged ReplyCode = -2
	// ReplyGap: {-3, i1, wm1, ...}: watermarks lie below ranges' first
	// offset - 1; nothing was written.
	ReplyGap ReplyCode = -3
	// ReplyPartial: {-4, writes, u1, k1, i, v, ... (k1 pairs), u2, k2, ...}:
	// a ModeUsers call applied every user but those listed (1-based u,
	// their k existing markers as in ReplyFound), which got nothing written.
	ReplyPartial ReplyCode = -4
)

// replyCodes lists every reply code with its Lua name.
var replyCodes = []struct {
	lua  string
	code ReplyCode
}{{"REPLY_APPLIED", ReplyApplied}, {"REPLY_FOUND", ReplyFound}, {"REPLY_NOT_READY", ReplyNotReady},
	{"REPLY_HOLDS_CHANGED", ReplyHoldsChanged}, {"REPLY_GAP", ReplyGap}, {"REPLY_PARTIAL", ReplyPartial}}

// LastKind is the last write kind of pkg/projections; the protocol knows
// every kind up to it (TestProtocolKnowsEveryKind fails when one is added).
const LastKind = projections.SAdd

// KindCode is a write kind's code in the write program: its number.
func KindCode(k projections.Kind) string { return strconv.Itoa(int(k)) }

// kindLua is a write kind's Lua name, KIND_<its String()>.
func kindLua(k projections.Kind) string { return "KIND_" + k.String() }

// kindArg holds each kind's code as an argument ready to send (converting
// it to an interface once, not per write).
var kindArg = func() [LastKind + 1]any {
	var out [LastKind + 1]any
	for k := projections.IncrBy; k <= LastKind; k++ {
		out[k] = KindCode(k)
	}
	return out
}()

// kindArgs is the number of arguments AppendWrites makes of each write kind
// (for ZAddMax and ZIncrBy a bound: an entry per key carries four, then two
// per write).
var kindArgs = [LastKind + 1]int{projections.IncrBy: 3, projections.ZIncrBy: 6, projections.ZAddMax: 6, projections.SetValue: 4,
	projections.SetMax: 4, projections.ZRemUpTo: 4, projections.ZRemMemberUpTo: 4, projections.ZRemPrefixUpTo: 5, projections.SAdd: 4}

// luaHeader declares the protocol's values as Lua locals: the modes, the
// write kinds, the reply codes, and the meta hash's status field, status
// values and hold field prefix (declared by internal/coord) that the global
// mode reads.
func luaHeader() string {
	var b strings.Builder
	b.WriteString("-- the protocol, declared by internal/apply/protocol.go\n")
	for _, m := range modes {
		fmt.Fprintf(&b, "local %s = %q\n", m.lua, m.m)
	}
	for k := projections.IncrBy; k <= LastKind; k++ {
		fmt.Fprintf(&b, "local %s = %q\n", kindLua(k), KindCode(k))
	}
	for _, r := range replyCodes {
		fmt.Fprintf(&b, "local %s = %d\n", r.lua, r.code)
	}
	fmt.Fprintf(&b, "local FIELD_STATUS = %q\nlocal STATUS_READY = %q\nlocal STATUS_PAUSED = %q\nlocal HOLD_PREFIX = %q\n",
		coord.FieldStatus, coord.StatusReady, coord.StatusPaused, coord.HoldPrefix)
	return b.String()
}

// Reply is a decoded reply of the apply or seal script.
type Reply struct {
	// Code is what the call did.
	Code ReplyCode
	// Writes is the number of writes applied (ReplyApplied).
	Writes int64
	// Status is the meta status (ReplyNotReady; "" when the hash is missing).
	Status string
	// Hits are the guards found (ReplyFound) or the gaps (ReplyGap).
	Hits []Hit
}

// Hit is one marker or range a reply names: its 0-based position among
// those of the call, and the value Redis holds for it (an origin, or a watermark).
type Hit struct {
	At    int
	Value string
}

// Offset is the hit's value as a watermark.
func (h Hit) Offset() (int64, error) {
	o, err := strconv.ParseInt(h.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("watermark %q of position %d: %w", h.Value, h.At+1, err)
	}
	return o, nil
}

// DecodeReply decodes vals, the reply of a call with n markers or ranges,
// checking its shape against its code.
func DecodeReply(vals []any, n int) (Reply, error) {
	if len(vals) == 0 {
		return Reply{}, fmt.Errorf("empty script reply")
	}
	c, ok := vals[0].(int64)
	if !ok {
		return Reply{}, fmt.Errorf("script reply %v: code %T, want an integer", vals, vals[0])
	}
	r := Reply{Code: ReplyCode(c)}
	switch r.Code {
	case ReplyApplied:
		if r.Writes, ok = pairValue[int64](vals); !ok {
			return Reply{}, fmt.Errorf("script reply %v: want {%d, writes}", vals, c)
		}
	case ReplyNotReady:
		if r.Status, ok = pairValue[string](vals); !ok {
			return Reply{}, fmt.Errorf("script reply %v: want {%d, status}", vals, c)
		}
	case ReplyHoldsChanged:
		if len(vals) != 1 {
			return Reply{}, fmt.Errorf("script reply %v: want {%d}", vals, c)
		}
	case ReplyFound, ReplyGap:
		if len(vals) < 3 || len(vals)%2 == 0 {
			return Reply{}, fmt.Errorf("script reply %v: want {%d, position, value, ...}", vals, c)
		}
		r.Hits = make([]Hit, 0, len(vals)/2)
		for j := 1; j < len(vals); j += 2 {
			at, ok := vals[j].(int64)
			v, isStr := vals[j+1].(string)
			if !ok || !isStr || at < 1 || at > int64(n) {
				return Reply{}, fmt.Errorf("script reply %v: entry %d names position %v (%T) of %d", vals, j, vals[j], vals[j+1], n)
			}
			r.Hits = append(r.Hits, Hit{At: int(at - 1), Value: v})
		}
	default:
		return Reply{}, fmt.Errorf("script reply %v: unknown code %d", vals, c)
	}
	return r, nil
}

// Unexpected is the error of a reply whose code the caller does not take.
func (r Reply) Unexpected() error { return fmt.Errorf("unexpected script reply code %d", r.Code) }

// pairValue returns the second and last element of a two-element reply as a T.
func pairValue[T any](vals []any) (T, bool) {
	var zero T
	if len(vals) != 2 {
		return zero, false
	}
	v, ok := vals[1].(T)
	return v, ok
}

// DecodeUsersReply decodes vals, the reply of a ModeUsers call whose users
// have sizes[u] markers: the writes applied and, per user index, the markers
// found (nil when every user was applied).
func DecodeUsersReply(vals []any, sizes []int) (int64, map[int][]Hit, error) {
	if len(vals) < 2 {
		return 0, nil, fmt.Errorf("script reply %v: want {code, writes, ...}", vals)
	}
	c, ok := vals[0].(int64)
	writes, isInt := vals[1].(int64)
	if !ok || !isInt {
		return 0, nil, fmt.Errorf("script reply %v: want {code, writes, ...}", vals)
	}
	switch ReplyCode(c) {
	case ReplyApplied:
		if len(vals) != 2 {
			return 0, nil, fmt.Errorf("script reply %v: want {%d, writes}", vals, c)
		}
		return writes, nil, nil
	case ReplyPartial:
	default:
		return 0, nil, fmt.Errorf("script reply %v: unexpected code %d", vals, c)
	}
	found := map[int][]Hit{}
	for j := 2; j < len(vals); {
		u, ok := vals[j].(int64)
		k, isInt := at[int64](vals, j+1)
		if !ok || !isInt || u < 1 || u > int64(len(sizes)) || k < 1 || j+2+2*int(k) > len(vals) {
			return 0, nil, fmt.Errorf("script reply %v: entry %d names user %v of %d", vals, j, vals[j], len(sizes))
		}
		r, err := DecodeReply(append([]any{int64(ReplyFound)}, vals[j+2:j+2+2*int(k)]...), sizes[u-1])
		if err != nil {
			return 0, nil, fmt.Errorf("user %d: %w", u, err)
		}
		found[int(u-1)] = r.Hits
		j += 2 + 2*int(k)
	}
	return writes, found, nil
}

// at returns vals[i] as a T, if it is one.
func at[T any](vals []any, i int) (T, bool) {
	var zero T
	if i >= len(vals) {
		return zero, false
	}
	v, ok := vals[i].(T)
	return v, ok
}
