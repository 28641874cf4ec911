package apply

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"projector/internal/gen"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// TestUsersCallDropsOnlyTheMarkedUser: in one call of several users (a
// standalone server), a user whose marker exists gets nothing written by
// that call and is applied again without the marked record; the other users
// of the call are applied once. On real Redis and on miniredis (the
// embedded demo's Redis).
func TestUsersCallDropsOnlyTheMarkedUser(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.SetTime(testNow)
	for name, rdb := range map[string]redis.UniversalClient{
		"redis":     testredis.StartStandalone(t).Client(),
		"miniredis": redis.NewClient(&redis.Options{Addr: mr.Addr()}),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a := newTestApplier(t, rdb, projections.Defaults())
			if a.perCall < 3 {
				t.Fatalf("perCall = %d on a standalone server, want several users per call", a.perCall)
			}
			ts := testNow.Add(-time.Hour)
			recs, ranges := batchAt(0, view("a1", "u1", "p1", ts), view("a2", "u2", "p1", ts))
			if _, err := a.Apply(ctx, recs, ranges); err != nil {
				t.Fatal(err)
			}
			// u1's first view again (a redelivery) and a new one, new views of u2 and u3
			recs, ranges = batchAt(2, view("a1", "u1", "p1", ts), view("b1", "u1", "p2", ts.Add(time.Second)),
				view("b2", "u2", "p2", ts.Add(time.Second)), view("b3", "u3", "p3", ts.Add(time.Second)))
			res, err := a.Apply(ctx, recs, ranges)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcomes[0] != Duplicate { // its origin is offset 0, not 2
				t.Errorf("re-published view: outcome %v, want Duplicate", res.Outcomes[0])
			}
			for i, o := range res.Outcomes[1:] {
				if o != Applied {
					t.Errorf("record %d: outcome %v, want Applied", i+1, o)
				}
			}
			if res.UserCalls != 2 { // one call of all three users, then u1 again without a1
				t.Errorf("%d user calls, want 2", res.UserCalls)
			}
			for u, want := range map[string]string{"u1": "2", "u2": "2", "u3": "1"} {
				if got := mustGet(t, rdb, "st:{u:"+u+"}:views:"+testDay); got != want {
					t.Errorf("%s views = %s, want %s", u, got, want)
				}
			}
		})
	}
}

// commandCalls returns how many times rdb's server ran the command name
// (INFO commandstats).
func commandCalls(t *testing.T, rdb *redis.Client, name string) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "cmdstat_"+name+":calls=")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	if err != nil {
		t.Fatalf("INFO commandstats %s: %v", name, err)
	}
	return n
}

// dumpState returns every key of rdb with its type, value and expiry (in
// three pipelined round trips).
func dumpState(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	types := make([]*redis.StatusCmd, len(keys))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			types[i] = p.Type(ctx, k)
		}
		return nil
	})
	vals := make([]func() any, len(keys))
	exps := make([]*redis.DurationCmd, len(keys))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			switch typ := types[i].Val(); typ {
			case "string":
				c := p.Get(ctx, k)
				vals[i] = func() any { return c.Val() }
			case "hash":
				c := p.HGetAll(ctx, k)
				vals[i] = func() any { return c.Val() }
			case "set":
				c := p.SMembers(ctx, k)
				vals[i] = func() any { m := c.Val(); sort.Strings(m); return m }
			case "zset":
				c := p.ZRangeWithScores(ctx, k, 0, -1)
				vals[i] = func() any { return c.Val() }
			default:
				t.Errorf("%s: type %s", k, typ)
				vals[i] = func() any { return nil }
			}
			exps[i] = p.PExpireTime(ctx, k)
		}
		return nil
	})
	out := make(map[string]string, len(keys))
	for i, k := range keys {
		out[k] = fmt.Sprintf("%v expires %d", vals[i](), exps[i].Val().Milliseconds())
	}
	return out
}

// TestUsersCallBoundedByRecords: a user with more than callRecords records
// gets a call of its own, the users after it share one; all are applied.
func TestUsersCallBoundedByRecords(t *testing.T) {
	rdb := testredis.StartStandalone(t).Client()
	a := newTestApplier(t, rdb, projections.Defaults())
	ts := testNow.Add(-time.Hour)
	var evs []events.Event
	for i := range callRecords + 1 {
		evs = append(evs, view(fmt.Sprintf("h%d", i), "heavy", "p1", ts.Add(time.Duration(i)*time.Millisecond)))
	}
	for _, u := range []string{"u1", "u2", "u3"} {
		evs = append(evs, view("v"+u, u, "p2", ts))
	}
	recs, ranges := batchAt(0, evs...)
	res, err := a.Apply(context.Background(), recs, ranges)
	if err != nil {
		t.Fatal(err)
	}
	if res.UserCalls != 2 {
		t.Errorf("%d user calls, want 2 (the heavy user alone, then the others)", res.UserCalls)
	}
	if got, want := mustGet(t, rdb, "st:{u:heavy}:views:"+testDay), fmt.Sprint(callRecords+1); got != want {
		t.Errorf("heavy views = %s, want %s", got, want)
	}
	for _, u := range []string{"u1", "u2", "u3"} {
		if got := mustGet(t, rdb, "st:{u:"+u+"}:views:"+testDay); got != "1" {
			t.Errorf("%s views = %s, want 1", u, got)
		}
	}
}

// smallLog is the decoded valid records of 1,500 records of the generator's
// mix (40 users, 30 products, the two hours before testNow) at consecutive
// offsets of one partition.
func smallLog() []Record {
	gc := gen.DefaultConfig()
	gc.Users, gc.Products, gc.Start, gc.Span = 40, 30, testNow.Add(-2*time.Hour), time.Hour
	var recs []Record
	for i, r := range gen.New(gc).Log(1500) {
		if ev, err := events.Decode(r.Value); err == nil {
			recs = append(recs, Record{Topic: "shop.views", Partition: 0, Offset: int64(i), Event: ev})
		}
	}
	return recs
}

// compareStates reports every key whose type, value or expiry in got
// (dumpState) differs from want's, and every key only one of them holds.
func compareStates(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s: want %q, got %q", what, k, v, got[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s is not wanted", what, k)
		}
	}
}
