package apply

import (
	"math/rand/v2"
	"reflect"
	"testing"

	p "projector/pkg/projections"
)

// groupCoalescer, reused across pipelines of groups of one or more records,
// small and large, gives what Coalesce gives for the group's writes in order
// (a single record's writes as they are), and a group's result stays as it
// was while later groups of the same pipeline are coalesced.
func TestGroupCoalescerEqualsCoalesce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	kinds := []p.Kind{p.IncrBy, p.ZIncrBy, p.ZAddMax, p.SetValue, p.SetMax, p.ZRemUpTo, p.SAdd}
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	var gc groupCoalescer
	for range 500 {
		gc.reset()
		var got, want [][]p.Write
		for range 1 + rng.IntN(20) {
			g := make([]*Item, 1+rng.IntN(12))
			var all []p.Write
			for j := range g {
				ws := make([]p.Write, rng.IntN(16))
				for i := range ws {
					ws[i] = p.Write{Kind: kinds[rng.IntN(len(kinds))], Key: pick("a", "b", "c", "d"), Member: pick("x", "y", "z"),
						Value: pick("", "v"), Guard: pick("", "g"), Delta: rng.Int64N(5), Score: rng.Int64N(100), ExpireAt: rng.Int64N(100)}
				}
				g[j] = &Item{user: ws}
				all = append(all, ws...)
			}
			w := Coalesce(all)
			if len(g) == 1 {
				w = all
			}
			got, want = append(got, gc.of(g)), append(want, append([]p.Write{}, w...))
		}
		for i := range got {
			if !reflect.DeepEqual(append([]p.Write{}, got[i]...), want[i]) {
				t.Fatalf("group %d of %d:\ngot  %+v\nwant %+v", i, len(got), got[i], want[i])
			}
		}
	}
}
