package apply

import (
	"testing"

	p "projector/pkg/projections"
)

func TestCoalesceMergesOnlyWhereSafe(t *testing.T) {
	in := []p.Write{
		{Kind: p.IncrBy, Key: "c", Delta: 1, ExpireAt: 5},
		{Kind: p.ZAddMax, Key: "lv", Member: "a", Score: 10, ExpireAt: 20},
		{Kind: p.ZAddMax, Key: "lv", Member: "a", Score: 7, ExpireAt: 17},
		{Kind: p.ZIncrBy, Key: "z", Member: "m", Delta: 2},
		{Kind: p.ZRemUpTo, Key: "lv", Score: 12},
		{Kind: p.ZAddMax, Key: "lv", Member: "a", Score: 11, ExpireAt: 21},
		{Kind: p.IncrBy, Key: "c", Delta: 4, ExpireAt: 9},
		{Kind: p.ZIncrBy, Key: "z", Member: "m", Delta: 3},
		{Kind: p.SetValue, Key: "doc", Value: "x"},
		{Kind: p.SetValue, Key: "doc", Value: "x"},
		{Kind: p.SAdd, Key: "reg", Member: "k"},
		{Kind: p.SAdd, Key: "reg", Member: "k"},
	}
	out := Coalesce(in)
	if len(out) != 7 {
		t.Fatalf("got %d writes: %+v", len(out), out)
	}
	if out[0].Delta != 5 || out[0].ExpireAt != 9 {
		t.Errorf("counter = %+v, want delta 5 expiry 9", out[0])
	}
	if out[1].Score != 10 || out[1].ExpireAt != 20 {
		t.Errorf("first zadd = %+v, want the max before the barrier", out[1])
	}
	if out[2].Delta != 5 {
		t.Errorf("zincr = %+v, want delta 5", out[2])
	}
	if out[3].Kind != p.ZRemUpTo || out[4].Kind != p.ZAddMax || out[4].Score != 11 {
		t.Errorf("the barrier must keep the later zadd after it: %+v", out[3:5])
	}
	// a value set again after another value is the last one: nothing is dropped
	docs := Coalesce([]p.Write{{Kind: p.SetValue, Key: "doc", Value: "x"}, {Kind: p.SetValue, Key: "doc", Value: "y"},
		{Kind: p.SetValue, Key: "doc", Value: "x"}, {Kind: p.SetValue, Key: "doc", Value: "x"}})
	if len(docs) != 3 || docs[2].Value != "x" {
		t.Errorf("SetValue x, y, x, x coalesced to %+v, want x, y, x", docs)
	}
}
