package apply

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
// decoded by decodeReply.

// mode is what one call of the apply script does (its ARGV[1]).
type mode string

// The modes of the apply script. An unknown mode is an error of the script.
const (
	// modeUser: the idempotency markers of a user's records guard the
	// user's writes; they are set when none exists, with the writes.
	modeUser mode = "u"
	// modeUsers: several users' modeUser calls in one (a standalone
	// server: the keys of a call need not share a slot); each user's
	// markers guard only that user's writes.
	modeUsers mode = "U"
	// modeCheck: the markers are only read; nothing is set or written.
	modeCheck mode = "c"
	// modeGlobal: the partitions' watermarks guard the global writes and
	// move to the end of the batch's ranges.
	modeGlobal mode = "g"
	// modeGlobalGaps is modeGlobal that also refuses a batch when a
	// watermark lies below a range's first offset - 1 (a gap). The seal
	// script takes the same two modes.
	modeGlobalGaps mode = "G"
)

// arg is m as a script argument.
func (m mode) arg() any { return string(m) }

// modes lists every mode with its Lua name.
var modes = []struct {
	lua string
	m   mode
}{{"MODE_USER", modeUser}, {"MODE_USERS", modeUsers}, {"MODE_CHECK", modeCheck}, {"MODE_GLOBAL", modeGlobal}, {"MODE_GLOBAL_GAPS", modeGlobalGaps}}

// replyCode is the first element of every reply of the apply and seal scripts.
type replyCode int64

// The reply codes.
const (
	// replyApplied: {1, writes applied}.
	replyApplied replyCode = 1
	// replyFound: {0, i1, v1, i2, v2, ...}: guards were found and nothing
	// was written; i is the 1-based position of a marker (v its stored
	// origin) or of a range (v its stored watermark).
	replyFound replyCode = 0
	// replyNotReady: {-1, status}: the meta hash is missing ("") or its
	// status is neither ready nor paused; nothing was written.
	replyNotReady replyCode = -1
	// replyHoldsChanged: {-2}: the meta hash holds other holds than the
	// batch was planned with; nothing was written.
	replyHoldsChanged replyCode = -2
	// replyGap: {-3, i1, wm1, ...}: watermarks lie below ranges' first
	// offset - 1; nothing was written.
	replyGap replyCode = -3
	// replyPartial: {-4, writes, u1, k1, i, v, ... (k1 pairs), u2, k2, ...}:
	// a modeUsers call applied every user but those listed (1-based u,
	// their k existing markers as in replyFound), which got nothing written.
	replyPartial replyCode = -4
)

// replyCodes lists every reply code with its Lua name.
var replyCodes = []struct {
	lua  string
	code replyCode
}{{"REPLY_APPLIED", replyApplied}, {"REPLY_FOUND", replyFound}, {"REPLY_NOT_READY", replyNotReady},
	{"REPLY_HOLDS_CHANGED", replyHoldsChanged}, {"REPLY_GAP", replyGap}, {"REPLY_PARTIAL", replyPartial}}

// lastKind is the last write kind of pkg/projections; the protocol knows
// every kind up to it (TestProtocolKnowsEveryKind fails when one is added).
const lastKind = projections.SAdd

// kindCode is a write kind's code in the write program: its number.
func kindCode(k projections.Kind) string { return strconv.Itoa(int(k)) }

// kindLua is a write kind's Lua name, KIND_<its String()>.
func kindLua(k projections.Kind) string { return "KIND_" + k.String() }

// kindArg holds each kind's code as an argument ready to send (converting
// it to an interface once, not per write).
var kindArg = func() [lastKind + 1]any {
	var out [lastKind + 1]any
	for k := projections.IncrBy; k <= lastKind; k++ {
		out[k] = kindCode(k)
	}
	return out
}()

// kindArgs is the number of arguments appendWrites makes of each write kind
// (for ZAddMax and ZIncrBy a bound: an entry per key carries four, then two
// per write).
var kindArgs = [lastKind + 1]int{projections.IncrBy: 3, projections.ZIncrBy: 6, projections.ZAddMax: 6, projections.SetValue: 4,
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
	for k := projections.IncrBy; k <= lastKind; k++ {
		fmt.Fprintf(&b, "local %s = %q\n", kindLua(k), kindCode(k))
	}
	for _, r := range replyCodes {
		fmt.Fprintf(&b, "local %s = %d\n", r.lua, r.code)
	}
	fmt.Fprintf(&b, "local FIELD_STATUS = %q\nlocal STATUS_READY = %q\nlocal STATUS_PAUSED = %q\nlocal HOLD_PREFIX = %q\n",
		coord.FieldStatus, coord.StatusReady, coord.StatusPaused, coord.HoldPrefix)
	return b.String()
}

// reply is a decoded reply of the apply or seal script.
type reply struct {
	code replyCode
	// writes is the number of writes applied (replyApplied).
	writes int64
	// status is the meta status (replyNotReady; "" when the hash is missing).
	status string
	// hits are the guards found (replyFound) or the gaps (replyGap).
	hits []hit
}

// hit is one marker or range a reply names: its 0-based position among
// those of the call, and the value Redis holds for it (an origin, or a watermark).
type hit struct {
	at    int
	value string
}

// offset is the hit's value as a watermark.
func (h hit) offset() (int64, error) {
	o, err := strconv.ParseInt(h.value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("watermark %q of position %d: %w", h.value, h.at+1, err)
	}
	return o, nil
}

// decodeReply decodes vals, the reply of a call with n markers or ranges,
// checking its shape against its code.
func decodeReply(vals []any, n int) (reply, error) {
	if len(vals) == 0 {
		return reply{}, fmt.Errorf("empty script reply")
	}
	c, ok := vals[0].(int64)
	if !ok {
		return reply{}, fmt.Errorf("script reply %v: code %T, want an integer", vals, vals[0])
	}
	r := reply{code: replyCode(c)}
	switch r.code {
	case replyApplied:
		if r.writes, ok = pairValue[int64](vals); !ok {
			return reply{}, fmt.Errorf("script reply %v: want {%d, writes}", vals, c)
		}
	case replyNotReady:
		if r.status, ok = pairValue[string](vals); !ok {
			return reply{}, fmt.Errorf("script reply %v: want {%d, status}", vals, c)
		}
	case replyHoldsChanged:
		if len(vals) != 1 {
			return reply{}, fmt.Errorf("script reply %v: want {%d}", vals, c)
		}
	case replyFound, replyGap:
		if len(vals) < 3 || len(vals)%2 == 0 {
			return reply{}, fmt.Errorf("script reply %v: want {%d, position, value, ...}", vals, c)
		}
		r.hits = make([]hit, 0, len(vals)/2)
		for j := 1; j < len(vals); j += 2 {
			at, ok := vals[j].(int64)
			v, isStr := vals[j+1].(string)
			if !ok || !isStr || at < 1 || at > int64(n) {
				return reply{}, fmt.Errorf("script reply %v: entry %d names position %v (%T) of %d", vals, j, vals[j], vals[j+1], n)
			}
			r.hits = append(r.hits, hit{at: int(at - 1), value: v})
		}
	default:
		return reply{}, fmt.Errorf("script reply %v: unknown code %d", vals, c)
	}
	return r, nil
}

// unexpected is the error of a reply whose code the caller does not take.
func (r reply) unexpected() error { return fmt.Errorf("unexpected script reply code %d", r.code) }

// pairValue returns the second and last element of a two-element reply as a T.
func pairValue[T any](vals []any) (T, bool) {
	var zero T
	if len(vals) != 2 {
		return zero, false
	}
	v, ok := vals[1].(T)
	return v, ok
}

// decodeUsersReply decodes vals, the reply of a modeUsers call whose users
// have sizes[u] markers: the writes applied and, per user index, the markers
// found (nil when every user was applied).
func decodeUsersReply(vals []any, sizes []int) (int64, map[int][]hit, error) {
	if len(vals) < 2 {
		return 0, nil, fmt.Errorf("script reply %v: want {code, writes, ...}", vals)
	}
	c, ok := vals[0].(int64)
	writes, isInt := vals[1].(int64)
	if !ok || !isInt {
		return 0, nil, fmt.Errorf("script reply %v: want {code, writes, ...}", vals)
	}
	switch replyCode(c) {
	case replyApplied:
		if len(vals) != 2 {
			return 0, nil, fmt.Errorf("script reply %v: want {%d, writes}", vals, c)
		}
		return writes, nil, nil
	case replyPartial:
	default:
		return 0, nil, fmt.Errorf("script reply %v: unexpected code %d", vals, c)
	}
	found := map[int][]hit{}
	for j := 2; j < len(vals); {
		u, ok := vals[j].(int64)
		k, isInt := at[int64](vals, j+1)
		if !ok || !isInt || u < 1 || u > int64(len(sizes)) || k < 1 || j+2+2*int(k) > len(vals) {
			return 0, nil, fmt.Errorf("script reply %v: entry %d names user %v of %d", vals, j, vals[j], len(sizes))
		}
		r, err := decodeReply(append([]any{int64(replyFound)}, vals[j+2:j+2+2*int(k)]...), sizes[u-1])
		if err != nil {
			return 0, nil, fmt.Errorf("user %d: %w", u, err)
		}
		found[int(u-1)] = r.hits
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
