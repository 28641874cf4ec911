package apply

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"projector/internal/gen"
	"projector/internal/testing/testredis"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// benchLog returns n decoded events of the generator's realistic mix with
// event times in the hour before at, spread over users users, placed at
// consecutive offsets of one partition (poison records are left out).
func benchLog(b *testing.B, n, users int, at time.Time) []Record {
	b.Helper()
	gc := gen.DefaultConfig()
	gc.Users, gc.Products = users, 2000
	gc.Start, gc.Span = at.Add(-time.Hour), time.Hour
	recs := make([]Record, 0, n)
	for i, r := range gen.New(gc).Log(n) {
		ev, err := events.Decode(r.Value)
		if err != nil {
			continue
		}
		recs = append(recs, Record{Topic: "shop.views", Partition: 0, Offset: int64(i), Event: ev})
	}
	return recs
}

// BenchmarkCoalesce measures coalescing a 2000-event batch (10,000 users):
// its global writes (one slot group), and its user writes group by group;
// ns/op is per batch.
func BenchmarkCoalesce(b *testing.B) {
	p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		b.Fatal(err)
	}
	var global []projections.Write
	users := map[string][]projections.Write{}
	for _, r := range benchLog(b, 2000, 10_000, testNow) {
		for _, w := range p.Plan(r.Event, testNow, nil) {
			if w.Global {
				global = append(global, w)
			} else {
				users[r.Event.UserID] = append(users[r.Event.UserID], w)
			}
		}
	}
	groups := [][]projections.Write{global}
	for _, ws := range users {
		groups = append(groups, ws)
	}
	for _, bc := range []struct {
		name   string
		groups [][]projections.Write
	}{{"global", groups[:1]}, {"users", groups[1:]}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var in, out int
			for b.Loop() {
				in, out = 0, 0
				for _, ws := range bc.groups {
					in += len(ws)
					out += len(Coalesce(ws))
				}
			}
			b.ReportMetric(float64(in), "writes-in")
			b.ReportMetric(float64(out), "writes-out")
		})
	}
}

// BenchmarkApply applies b.N generated events in batches against a real
// redis-server; ns/op is per event, redis-us/ev is Redis's CPU per event
// (INFO cpu), script-calls/ev the apply script calls per event.
func BenchmarkApply(b *testing.B) {
	for _, bc := range []struct{ batch, users int }{{2000, 10_000}, {2000, 1_000}, {500, 10_000}, {10_000, 10_000}, {50, 10_000}} {
		b.Run("batch="+strconv.Itoa(bc.batch)+"/users="+strconv.Itoa(bc.users), func(b *testing.B) {
			srv := testredis.StartStandalone(b)
			ctx := context.Background()
			now := time.Now()
			p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
			if err != nil {
				b.Fatal(err)
			}
			a := New(srv.Client(), p, Options{Window: 24 * time.Hour, Location: time.UTC, Now: time.Now}, Guards{})
			if err := a.LoadScript(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := NewMeta(srv.Client(), "", time.Now, false).Init(ctx, nil); err != nil {
				b.Fatal(err)
			}
			recs := benchLog(b, b.N, bc.users, now)
			cpu0 := redisCPU(b, srv)
			usec0 := scriptUsec(b, srv)
			calls := 0
			b.ResetTimer()
			for i := 0; i < len(recs); i += bc.batch {
				part := recs[i:min(i+bc.batch, len(recs))]
				rng := []Range{{Topic: "shop.views", Partition: 0, First: part[0].Offset, Last: part[len(part)-1].Offset}}
				res, err := a.Apply(ctx, part, rng)
				if err != nil {
					b.Fatal(err)
				}
				calls += res.UserCalls + res.GlobalCalls
			}
			b.StopTimer()
			n := float64(max(len(recs), 1))
			b.ReportMetric(1e6*(redisCPU(b, srv)-cpu0)/n, "redis-us/ev")
			b.ReportMetric((scriptUsec(b, srv)-usec0)/n, "script-us/ev")
			b.ReportMetric(float64(calls)/n, "script-calls/ev")
		})
	}
}

// scriptUsec returns the microseconds Redis spent in script calls (EVAL,
// EVALSHA and FCALL: the usec= fields of INFO commandstats).
func scriptUsec(b *testing.B, srv *testredis.Server) float64 {
	return sumInfo(b, srv, "commandstats", func(k, v string) (string, bool) {
		if k != "cmdstat_eval" && k != "cmdstat_evalsha" && k != "cmdstat_fcall" {
			return "", false
		}
		for _, kv := range strings.Split(v, ",") {
			if usec, ok := strings.CutPrefix(kv, "usec="); ok {
				return usec, true
			}
		}
		return "", false
	})
}

// redisCPU returns used_cpu_sys + used_cpu_user of the server in seconds.
func redisCPU(b *testing.B, srv *testredis.Server) float64 {
	return sumInfo(b, srv, "cpu", func(k, v string) (string, bool) {
		return v, k == "used_cpu_sys" || k == "used_cpu_user"
	})
}

// sumInfo sums the numbers that pick finds in the key:value lines of an
// INFO section of the server.
func sumInfo(b *testing.B, srv *testredis.Server, section string, pick func(k, v string) (string, bool)) float64 {
	b.Helper()
	info, err := srv.Client().Info(context.Background(), section).Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if num, ok := pick(k, v); ok {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil {
				b.Fatalf("INFO %s %s: %v", section, line, err)
			}
			total += f
		}
	}
	return total
}
