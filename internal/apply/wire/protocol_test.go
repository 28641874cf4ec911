package wire

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	p "projector/pkg/projections"
)

// TestProtocolKnowsEveryKind: every write kind of pkg/projections has a
// code, an argument count and a branch in apply.lua, and every mode a branch.
func TestProtocolKnowsEveryKind(t *testing.T) {
	if s := (LastKind + 1).String(); s != "UNKNOWN" {
		t.Fatalf("pkg/projections has kind %s after %s: add it to the protocol (LastKind, kindArgs, apply.lua)", s, LastKind)
	}
	for k := p.IncrBy; k <= LastKind; k++ {
		if kindArgs[k] == 0 || kindArg[k] != KindCode(k) {
			t.Errorf("kind %s: %d arguments, code %v", k, kindArgs[k], kindArg[k])
		}
		// counters have a section of their own, ahead of the other writes
		if k != p.IncrBy && !strings.Contains(applyBody, "kind == "+kindLua(k)+" then") {
			t.Errorf("apply.lua has no branch for %s", kindLua(k))
		}
	}
	for _, m := range modes {
		if !strings.Contains(applyBody, "mode == "+m.lua) {
			t.Errorf("apply.lua has no branch for %s", m.lua)
		}
	}
}

// TestScriptsNameOnlyDeclaredValues: every protocol name the scripts use is
// declared by the header, once.
func TestScriptsNameOnlyDeclaredValues(t *testing.T) {
	declared := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^local ([A-Z_]+) = `).FindAllStringSubmatch(luaHeader(), -1) {
		declared[m[1]]++
	}
	for name, n := range declared {
		if n != 1 {
			t.Errorf("the header declares %s %d times", name, n)
		}
	}
	used := regexp.MustCompile(`\b(?:MODE|KIND|REPLY|STATUS|HOLD)_[A-Z_]+\b`)
	for name, body := range map[string]string{"apply.lua": applyBody, "the seal script": sealBody} {
		names := used.FindAllString(body, -1)
		if len(names) == 0 {
			t.Errorf("%s names no protocol value", name)
		}
		for _, u := range names {
			if declared[u] == 0 {
				t.Errorf("%s names %s, which the header does not declare", name, u)
			}
		}
	}
}

func TestDecodeReply(t *testing.T) {
	for _, c := range []struct {
		name string
		vals []any
		want string // fmt of the reply, or "error"
	}{
		{"applied", []any{int64(1), int64(7)}, "{1 7  []}"},
		{"applied without writes", []any{int64(1)}, "error"},
		{"not ready", []any{int64(-1), "rebuilding"}, "{-1 0 rebuilding []}"},
		{"not ready without status", []any{int64(-1)}, "error"},
		{"holds changed", []any{int64(-2)}, "{-2 0  []}"},
		{"holds changed with more", []any{int64(-2), int64(1)}, "error"},
		{"found", []any{int64(0), int64(2), "t:0:5", int64(1), "t:0:3"}, "{0 0  [{1 t:0:5} {0 t:0:3}]}"},
		{"found beyond the call", []any{int64(0), int64(3), "t:0:5"}, "error"},
		{"found at 0", []any{int64(0), int64(0), "t:0:5"}, "error"},
		{"found without value", []any{int64(0), int64(1)}, "error"},
		{"found without entries", []any{int64(0)}, "error"},
		{"found with a number", []any{int64(0), int64(1), int64(5)}, "error"},
		{"gap", []any{int64(-3), int64(1), "4"}, "{-3 0  [{0 4}]}"},
		{"unknown code", []any{int64(7)}, "error"},
		{"code as text", []any{"1", int64(0)}, "error"},
		{"empty", nil, "error"},
	} {
		r, err := DecodeReply(c.vals, 2)
		got := fmt.Sprint(r)
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("%s: DecodeReply(%v) = %s (%v), want %s", c.name, c.vals, got, err, c.want)
		}
	}
	if _, err := (Hit{At: 0, Value: "x"}).Offset(); err == nil {
		t.Errorf("offset of a watermark %q: no error", "x")
	}
}
