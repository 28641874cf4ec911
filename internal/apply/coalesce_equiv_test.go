package apply

import (
	"math/rand/v2"
	"reflect"
	"testing"

	p "projector/pkg/projections"
)

// Both ways of coalescing must give the same writes for any sequence,
// barriers, guards and repeated documents included.
func TestCoalesceSmallEqualsIndexed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []p.Kind{p.IncrBy, p.ZIncrBy, p.ZAddMax, p.SetValue, p.SetMax, p.ZRemUpTo, p.ZRemMemberUpTo, p.ZRemPrefixUpTo, p.SAdd}
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	merged := 0
	for range 20_000 {
		ws := make([]p.Write, rng.IntN(smallGroup+1))
		for i := range ws {
			ws[i] = p.Write{Kind: kinds[rng.IntN(len(kinds))], Key: pick("a", "b", "c"), Member: pick("x", "y"),
				Value: pick("", "v"), Guard: pick("", "", "g"), Delta: rng.Int64N(5), Score: rng.Int64N(100), ExpireAt: rng.Int64N(100)}
		}
		small, indexed := coalesceSmall(ws), coalesceIndexed(ws)
		if !reflect.DeepEqual(small, indexed) {
			t.Fatalf("writes %+v\nsmall   %+v\nindexed %+v", ws, small, indexed)
		}
		merged += len(ws) - len(small)
	}
	if merged == 0 {
		t.Fatal("no write was ever merged: the sequences exercise nothing")
	}
}

// groupCoalescer, reused across groups of one or more records, small and
// large, gives what Coalesce gives for the group's writes in order.
func TestGroupCoalescerEqualsCoalesce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	kinds := []p.Kind{p.IncrBy, p.ZIncrBy, p.ZAddMax, p.SetValue, p.SetMax, p.ZRemUpTo, p.SAdd}
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	var gc groupCoalescer
	large := 0
	for range 5_000 {
		g := make([]*item, 1+rng.IntN(12))
		var all []p.Write
		for j := range g {
			ws := make([]p.Write, rng.IntN(16))
			for i := range ws {
				ws[i] = p.Write{Kind: kinds[rng.IntN(len(kinds))], Key: pick("a", "b", "c", "d"), Member: pick("x", "y", "z"),
					Value: pick("", "v"), Guard: pick("", "g"), Delta: rng.Int64N(5), Score: rng.Int64N(100), ExpireAt: rng.Int64N(100)}
			}
			g[j] = &item{user: ws}
			all = append(all, ws...)
		}
		if len(all) > smallGroup {
			large++
		}
		want := Coalesce(all)
		if got := gc.of(g); !reflect.DeepEqual(append([]p.Write{}, got...), append([]p.Write{}, want...)) {
			t.Fatalf("group of %d records, %d writes:\ngot  %+v\nwant %+v", len(g), len(all), got, want)
		}
	}
	if large == 0 {
		t.Fatal("no group was larger than smallGroup")
	}
}
