package apply

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/apply/wire"
	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// leverRounds is how many interleaved rounds BenchmarkLevers runs.
const leverRounds = 3

// lever is one way of applying batches that BenchmarkLevers compares.
type lever struct {
	name string
	// apply applies one batch through a (set up by setup) or, for the
	// probes, straight through rdb.
	setup func(b *testing.B, a *Applier, srv *testredis.Server)
	apply func(ctx context.Context, a *Applier, rdb *redis.Client, recs []Record, rng []Range) error
}

// BenchmarkLevers compares the ways of applying batches against the peer
// side by side, in interleaved rounds, on a fresh redis-server each: the
// live shape (batches of 50 events over 10,000 users) and a backlog shape
// (batches of 10,000); "paced" is cmd/bench's live phase: batches of 150
// sent at 10,000 events per second, so that Redis idles between batches
// as it does there (its caches go cold). ns/op is per event; redis-us/ev is Redis's CPU per
// event (INFO cpu), calib-us the same server's CPU per INCRBY called from
// Lua before the run (the machine's speed), <CMD>-us/ev and <CMD>-calls/ev
// the INFO commandstats of the run per event. APPLY_LEVER_WARM=n applies n
// events of the same users first, unmeasured (a server in steady state:
// its keys exist, its tables stop growing). The variant "peer" is the
// at-least-once reference: every write as plain commands, pipelined per
// batch, no markers. With APPLY_BASE_LUA naming a file, the variant "base"
// runs the apply script of that file (another tree's apply.lua). "usersN"
// is the Applier with N users per script call (users64 is the default on a
// standalone server), "fcall64" the same body called as a Redis Function.
func BenchmarkLevers(b *testing.B) {
	var levers []lever
	if path := os.Getenv("APPLY_BASE_LUA"); path != "" {
		body, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		basePerCall := 1
		if env := os.Getenv("APPLY_BASE_PER_CALL"); env != "" {
			if basePerCall, err = strconv.Atoi(env); err != nil {
				b.Fatal(err)
			}
		}
		levers = append(levers, lever{name: "base", apply: applyWith, setup: func(b *testing.B, a *Applier, _ *testredis.Server) {
			a.script, a.perCall = wire.NewScript(string(body)), basePerCall
		}})
	}
	for _, k := range leverUsersPerCall() {
		levers = append(levers, lever{name: "users" + strconv.Itoa(k), apply: applyWith, setup: func(b *testing.B, a *Applier, _ *testredis.Server) {
			a.perCall = k
		}})
	}
	levers = append(levers,
		lever{name: "fcall" + strconv.Itoa(usersPerCallStandalone), apply: applyWith, setup: func(b *testing.B, a *Applier, srv *testredis.Server) {
			if err := useFunction(context.Background(), a, srv.Addr()); err != nil {
				b.Fatal(err)
			}
		}},
		lever{name: "peer", apply: applyPeer})
	for _, shape := range []struct {
		name        string
		batch, rate int
	}{{"live", 50, 0}, {"paced", 150, 10_000}, {"paced80", 80, 10_000}, {"backlog", 10_000, 0}} {
		b.Run(shape.name, func(b *testing.B) {
			for r := 1; r <= leverRounds; r++ {
				for _, l := range levers {
					b.Run(fmt.Sprintf("r%d/%s", r, l.name), func(b *testing.B) { runLever(b, l, shape.batch, shape.rate, 10_000) })
				}
			}
		})
	}
}

// leverUsersPerCall returns the users per call to compare: APPLY_PER_CALL
// (comma-separated), or 1 and usersPerCallStandalone.
func leverUsersPerCall() []int {
	return intsFromEnv("APPLY_PER_CALL", []int{1, usersPerCallStandalone})
}

// intsFromEnv parses the comma-separated integers of the environment
// variable name, or returns def when it is unset.
func intsFromEnv(name string, def []int) []int {
	env := os.Getenv(name)
	if env == "" {
		return def
	}
	var ks []int
	for _, f := range strings.Split(env, ",") {
		k, err := strconv.Atoi(f)
		if err != nil {
			panic(name + ": " + err.Error())
		}
		ks = append(ks, k)
	}
	return ks
}

// applyWith applies a batch with the Applier.
func applyWith(ctx context.Context, a *Applier, _ *redis.Client, recs []Record, rng []Range) error {
	_, err := a.Apply(ctx, recs, rng)
	return err
}

// runLever applies b.N generated events over users users in batches of
// batch with l, at most rate events per second (0: no limit), and reports
// the costs.
func runLever(b *testing.B, l lever, batch, rate, users int) {
	srv := testredis.StartStandalone(b)
	ctx := context.Background()
	rdb := srv.Client()
	now := time.Now()
	p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		b.Fatal(err)
	}
	a := New(rdb, p, Options{Window: 24 * time.Hour, Location: time.UTC, Now: time.Now}, Guards{})
	if l.setup != nil {
		l.setup(b, a, srv)
	}
	if err := a.LoadScript(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := NewMeta(rdb, "", time.Now, false).Init(ctx, nil); err != nil {
		b.Fatal(err)
	}
	warm := 0 // events applied before the measured ones (APPLY_LEVER_WARM): a server in steady state
	if ws := intsFromEnv("APPLY_LEVER_WARM", nil); len(ws) > 0 {
		warm = ws[0]
	}
	recs := benchLog(b, warm+b.N+(warm+b.N)/20+10, users, now) // more: the log's poison records are left out
	recs = recs[:min(len(recs), warm+b.N)]
	for i := 0; i < warm; i += batch {
		part := recs[i:min(i+batch, warm)]
		rng := []Range{{Topic: "shop.views", Partition: 0, First: part[0].Offset, Last: part[len(part)-1].Offset}}
		if err := l.apply(ctx, a, rdb, part, rng); err != nil {
			b.Fatal(err)
		}
	}
	recs = recs[warm:]
	calib := calibrate(b, srv)
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	cpu0 := redisCPU(b, srv)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < len(recs); i += batch {
		if rate > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		}
		part := recs[i:min(i+batch, len(recs))]
		rng := []Range{{Topic: "shop.views", Partition: 0, First: part[0].Offset, Last: part[len(part)-1].Offset}}
		if err := l.apply(ctx, a, rdb, part, rng); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(max(len(recs), 1))
	b.ReportMetric(1e6*(redisCPU(b, srv)-cpu0)/n, "redis-us/ev")
	b.ReportMetric(calib, "calib-us")
	reportCommandStats(b, srv, n)
}

// calibrate returns the server's CPU per INCRBY called from Lua (50,000
// calls), the measure of cmd/bench's calibration line.
func calibrate(b *testing.B, srv *testredis.Server) float64 {
	const calls, perCall = 50_000, 1000
	s := redis.NewScript(`for i = 1, tonumber(ARGV[1]) do redis.call('INCRBY', KEYS[1], 1) end return 1`)
	cpu0 := redisCPU(b, srv)
	for range calls / perCall {
		if err := s.Run(context.Background(), srv.Client(), []string{"px:calibration"}, perCall).Err(); err != nil {
			b.Fatal(err)
		}
	}
	return 1e6 * (redisCPU(b, srv) - cpu0) / calls
}

// cmdStat is one command's line of INFO commandstats.
type cmdStat struct {
	name  string
	calls float64
	usec  float64
}

// commandStats parses INFO commandstats.
func commandStats(b *testing.B, srv *testredis.Server) []cmdStat {
	b.Helper()
	info, err := srv.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var out []cmdStat
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(k, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		st := cmdStat{name: strings.ToUpper(name)}
		for _, kv := range strings.Split(v, ",") {
			f, num, _ := strings.Cut(kv, "=")
			x, err := strconv.ParseFloat(num, 64)
			switch f {
			case "calls":
				st.calls = x
			case "usec":
				st.usec = x
			default:
				continue
			}
			if err != nil {
				b.Fatalf("INFO commandstats %s: %v", line, err)
			}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].usec > out[j].usec })
	return out
}

// reportCommandStats reports every command's calls and usec per event (of
// n events), and inner-us/ev: the commands called from scripts (all but the
// script calls and the transactions' own, which the peer sends).
func reportCommandStats(b *testing.B, srv *testredis.Server, n float64) {
	outer := []string{"EVALSHA", "EVAL", "FCALL", "EXEC", "MULTI", "CONFIG", "INFO"}
	var inner float64
	for _, st := range commandStats(b, srv) {
		if st.name == "CONFIG" || st.name == "INFO" {
			continue
		}
		b.ReportMetric(st.calls/n, st.name+"-calls/ev")
		b.ReportMetric(st.usec/n, st.name+"-us/ev")
		if !slices.Contains(outer, st.name) {
			inner += st.usec
		}
	}
	b.ReportMetric(inner/n, "inner-us/ev")
}
