package wire

import (
	"fmt"
	"strings"
	"testing"

	p "projector/pkg/projections"
)

// TestArgCount: ArgCount bounds how many arguments AppendWrites makes, for
// every kind, up to four ZAddMax profiles and many keys of one write each
// (the grouped kinds' costliest shape).
func TestArgCount(t *testing.T) {
	for k := p.IncrBy; k <= p.SAdd; k++ {
		ws := []p.Write{{Kind: k, Key: "k"}, {Kind: k, Key: "k2"}}
		for i := range 4 {
			ws = append(ws, p.Write{Kind: k, Key: "k", Trim: p.Trim{Keep: i}})
		}
		for i := range 50 {
			ws = append(ws, p.Write{Kind: k, Key: fmt.Sprintf("own%d", i)})
		}
		if got, max := len(AppendWrites(nil, ws)), ArgCount(ws); got > max {
			t.Errorf("kind %d: AppendWrites made %d arguments, ArgCount says at most %d", k, got, max)
		}
	}
}

// TestWriteProgramSets: ZAddMax writes go as one entry per set between
// removals (barriers), never across one; counters go first.
func TestWriteProgramSets(t *testing.T) {
	trim := p.Trim{Keep: 10, RetentionMs: 100}
	z := func(key, member string, score int64) p.Write {
		return p.Write{Kind: p.ZAddMax, Key: key, Member: member, Score: score, ExpireAt: score + 100, Trim: trim}
	}
	ws := []p.Write{z("k1", "a", 1), {Kind: p.IncrBy, Key: "c", Delta: 2}, z("k2", "b", 2), z("k1", "c", 3),
		{Kind: p.ZRemUpTo, Key: "k1", Score: 5}, z("k1", "d", 6)}
	want := "1 10 100 100  1 c 2 0 3 k1 1 2 a 1 c 3 3 k2 1 1 b 2 6 k1 5  3 k1 1 1 d 6"
	if s := programText(ws); s != want {
		t.Errorf("program\n%s\nwant\n%s", s, want)
	}
}

// TestWriteProgramIncrs: ZIncrBy writes go as one entry per key and expiry
// between barriers, in the order of each key's first write, after the
// stretch's other writes; never across a barrier.
func TestWriteProgramIncrs(t *testing.T) {
	zi := func(key, member string, delta, at int64) p.Write {
		return p.Write{Kind: p.ZIncrBy, Key: key, Member: member, Delta: delta, ExpireAt: at}
	}
	ws := []p.Write{zi("r1", "a", 1, 9), zi("r2", "a", 2, 9), {Kind: p.SetValue, Key: "v", Value: "x", ExpireAt: 7},
		zi("r1", "b", 3, 9), zi("r1", "c", 4, 8), {Kind: p.SetMax, Key: "g", Score: 5}, zi("r1", "d", 5, 9)}
	zk, sv, sm := KindCode(p.ZIncrBy), KindCode(p.SetValue), KindCode(p.SetMax)
	want := fmt.Sprintf("0 0 %s v x 7 %s r1 9 2 a 1 b 3 %s r2 9 1 a 2 %s r1 8 1 c 4 %s g 5 0 %s r1 9 1 d 5", sv, zk, zk, zk, sm, zk)
	if s := programText(ws); s != want {
		t.Errorf("program\n%s\nwant\n%s", s, want)
	}
}

// programText returns the write program of ws as text, its arguments
// separated by spaces.
func programText(ws []p.Write) string {
	var got []string
	for _, a := range AppendWrites(nil, ws) {
		switch v := a.(type) {
		case *string:
			got = append(got, *v)
		case *int64:
			got = append(got, fmt.Sprint(*v))
		default:
			got = append(got, fmt.Sprint(v))
		}
	}
	return strings.Join(got, " ")
}
