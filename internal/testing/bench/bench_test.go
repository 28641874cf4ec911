package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"projector/internal/gen"
)

func TestSumMetricAddsEveryLabelSet(t *testing.T) {
	text := `# HELP projector_events_total Events by type and outcome.
# TYPE projector_events_total counter
projector_events_total{outcome="applied",type="view"} 1500
projector_events_total{outcome="duplicate",type="view"} 20
projector_events_total{outcome="poison",type="unknown"} 7
projector_events_total_extra 99
projector_script_calls_total{slot="user"} 3
`
	got, err := sumMetric(strings.NewReader(text), "projector_events_total", "")
	if err != nil || got != 1527 {
		t.Errorf("sum = %v, %v; want 1527", got, err)
	}
	got, err = sumMetric(strings.NewReader(text), "projector_events_total", `outcome="applied"`)
	if err != nil || got != 1500 {
		t.Errorf("applied = %v, %v; want 1500", got, err)
	}
	if _, err := sumMetric(strings.NewReader("projector_events_total{a=\"b\"} x\n"), "projector_events_total", ""); err == nil {
		t.Error("a malformed sample must be an error")
	}
}

func TestResultLine(t *testing.T) {
	ms := func(n int) Latencies {
		lat := Latencies{}
		for i := 1; i <= 100; i++ {
			lat = append(lat, time.Duration(i*n)*time.Millisecond)
		}
		return lat
	}
	r := Result{Consumer: Throughput{Rate: 52000.4, RedisCPU: 11.5, ConsumerCPU: 5.25}, Naive: 2600, Replay: 150000,
		Peer:     Throughput{Rate: 40000, RedisCPU: 23, ConsumerCPU: 3.5},
		Live:     []Live{{Rate: 10000, Latency: ms(1), RedisCPU: 30, ConsumerCPU: 10}, {Rate: 20000, Latency: ms(2)}},
		PeerLive: []Live{{Rate: 10000, RedisCPU: 20, ConsumerCPU: 10}},
		Shares: []BrokerShare{{Rate: 10000, Reader: ReaderNone, BrokerCPU: 10, Fetches: 100}, {Rate: 10000, Reader: ReaderConsumer, BrokerCPU: 14, Fetches: 400},
			{Rate: 10000, Reader: ReaderPeer, BrokerCPU: 20, Fetches: 900}, {Rate: 10000, Reader: ReaderJava, BrokerCPU: 12, Fetches: 150},
			{Rate: 20000, Reader: ReaderNone, BrokerCPU: 9}, {Rate: 20000, Reader: ReaderConsumer, BrokerCPU: 99}}}
	// live totals: projector 30 + 10 + (14 - 10) = 44, the peer 20 + 10 + (20 - 10) = 40
	want := "bench: consumer=52000 ev/s naive=2600 ev/s ratio=20.0 redis_cpu=11.50/ev consumer_cpu=5.25/ev replay=150000 ev/s p50=51.0ms p99=100.0ms" +
		" peer=40000 ev/s live_redis_ratio=1.50 backlog_redis_ratio=0.50 backlog_consumer_ratio=1.50 backlog_speedup=1.30 replay_ratio=2.88 p99_20k=200.0ms" +
		" broker_consumer=4.00/ev broker_java=2.00/ev fetch_consumer=300 fetch_java=50 live_total_ratio=1.10"
	if got := r.Line(); got != want {
		t.Errorf("line:\n%s\nwant:\n%s", got, want)
	}
	// Three rounds: the latencies and live_redis_ratio are medians over them,
	// each round's ratio from its own pair of phases.
	r.Live = []Live{{Rate: 10000, Latency: ms(1), RedisCPU: 30}, {Rate: 20000, Latency: ms(2)},
		{Rate: 10000, Latency: ms(3), RedisCPU: 90}, {Rate: 20000, Latency: ms(9)},
		{Rate: 10000, Latency: ms(2), RedisCPU: 40}, {Rate: 20000, Latency: ms(4)}}
	r.PeerLive = []Live{{Rate: 10000, RedisCPU: 20}, {Rate: 20000}, {Rate: 10000, RedisCPU: 30}, {Rate: 20000},
		{Rate: 10000, RedisCPU: 40}, {Rate: 20000}}
	// broker_consumer: each round's share against the load generator alone
	// in that round (14-10, 9-2, 30-20), the median of them.
	r.Shares = []BrokerShare{{Round: 1, Rate: 10000, Reader: ReaderNone, BrokerCPU: 10}, {Round: 1, Rate: 10000, Reader: ReaderConsumer, BrokerCPU: 14},
		{Round: 2, Rate: 10000, Reader: ReaderNone, BrokerCPU: 2}, {Round: 2, Rate: 10000, Reader: ReaderConsumer, BrokerCPU: 9},
		{Round: 3, Rate: 10000, Reader: ReaderNone, BrokerCPU: 20}, {Round: 3, Rate: 10000, Reader: ReaderConsumer, BrokerCPU: 30}}
	got, err := ParseLine(r.Line())
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Caused(r.Shares[5]); c != 10 {
		t.Errorf("round 3's consumer window caused %v, want 10 (30 - 20 of its round)", c)
	}
	if c := r.Caused(BrokerShare{Round: 4, Rate: 10000, Reader: ReaderConsumer, BrokerCPU: 5}); c != 0 {
		t.Errorf("a window without the load generator's alone in its round caused %v, want 0", c)
	}
	for k, v := range map[string]float64{"p50": 102, "p99": 200, "p99_20k": 400, "live_redis_ratio": 1.5, "broker_consumer": 7} {
		if got[k] != v {
			t.Errorf("three rounds: %s = %v, want %v", k, got[k], v)
		}
	}
	if (Result{}).Ratio() != 0 || (Latencies{}).Quantile(0.5) != 0 {
		t.Error("an empty result must not divide by zero")
	}
}

// TestParseLine: every field of the summary is present and numeric, read
// back with its value; a line missing a field or with a non-number is refused.
func TestParseLine(t *testing.T) {
	r := Result{Consumer: Throughput{Rate: 50000, RedisCPU: 12, ConsumerCPU: 6}, Peer: Throughput{Rate: 25000, RedisCPU: 24, ConsumerCPU: 4},
		Replay: 100000, Live: []Live{{Rate: 10000, Latency: Latencies{40 * time.Millisecond}, RedisCPU: 36}, {Rate: 20000, Latency: Latencies{90 * time.Millisecond}}},
		PeerLive: []Live{{Rate: 10000, RedisCPU: 24}}}
	got, err := ParseLine(r.Line())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"consumer": 50000, "naive": 0, "ratio": 0, "redis_cpu": 12, "consumer_cpu": 6, "replay": 100000,
		"p50": 40, "p99": 40, "peer": 25000, "live_redis_ratio": 1.5, "backlog_redis_ratio": 0.5, "backlog_consumer_ratio": 1.5,
		"backlog_speedup": 2, "replay_ratio": 2, "p99_20k": 90, "broker_consumer": 0, "broker_java": 0, "fetch_consumer": 0,
		"fetch_java": 0, "live_total_ratio": 1.5}
	if len(got) != len(SummaryFields) {
		t.Errorf("%d fields, want %d", len(got), len(SummaryFields))
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	line := r.Line()
	for _, bad := range []string{
		strings.Replace(line, " p99_20k=90.0ms", "", 1),
		strings.Replace(line, "peer=25000", "peer=fast", 1),
		strings.TrimPrefix(line, "bench: "),
	} {
		if _, err := ParseLine(bad); err == nil {
			t.Errorf("ParseLine(%q) accepted", bad)
		}
	}
}

func TestInfoFields(t *testing.T) {
	f := infoFields("# CPU\r\nused_cpu_sys:1.50\r\nused_cpu_user:2.25\r\n")
	if f["used_cpu_sys"] != "1.50" || f["used_cpu_user"] != "2.25" {
		t.Errorf("fields = %v", f)
	}
}

// TestCalibrate runs the calibration against a real redis-server: both
// figures are measured (positive, below a millisecond) and the key it used is gone.
func TestCalibrate(t *testing.T) {
	ctx := context.Background()
	r, err := StartRedis(ctx, t.TempDir(), RedisOptions{})
	defer r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Calibrate(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{"Redis us per call": c.RedisCallUS, "Go us per event": c.PlanUS} {
		if v <= 0 || v > 1000 {
			t.Errorf("%s = %v, want a positive figure below 1 ms", name, v)
		}
	}
	if n := r.Client().DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys left after calibration, want 0", n)
	}
	if !strings.HasPrefix(c.String(), "machine: Redis ") {
		t.Errorf("line %q", c.String())
	}
}

// TestLagGrows: the lag grows when it rose by more than half a second of traffic.
func TestLagGrows(t *testing.T) {
	for _, tc := range []struct {
		start, end int64
		want       bool
	}{{100, 5000, false}, {100, 10100, false}, {100, 10101, true}, {9000, 200, false}} {
		if got := (Live{Rate: 20000, LagStart: tc.start, LagEnd: tc.end}).LagGrows(); got != tc.want {
			t.Errorf("lag %d -> %d: grows %v, want %v", tc.start, tc.end, got, tc.want)
		}
	}
}

// The live phases at the two rates and in three rounds share no event id
// with each other or with the backlog's loaders, so an exactly-once consumer applies every
// event of its second phase instead of dropping it as a duplicate.
func TestLiveTrafficIdsAreNew(t *testing.T) {
	ids := map[string]string{}
	now := time.Now()
	take := func(name string, seed uint64) {
		gc := gen.DefaultConfig()
		gc.Seed = seed
		g := gen.New(gc)
		for range 2000 {
			r := g.Next(now)
			if r.ID == "" {
				continue // poison
			}
			if other, ok := ids[r.ID]; ok && other != name {
				t.Fatalf("event id %s in %s and %s", r.ID, other, name)
			}
			ids[r.ID] = name
		}
	}
	for k := range 8 {
		take("backlog", uint64(k+1))
	}
	for round := 1; round <= 3; round++ {
		take(fmt.Sprintf("live 10000 round %d", round), liveSeed(10_000, round))
		take(fmt.Sprintf("live 20000 round %d", round), liveSeed(20_000, round))
	}
}

// TestParseJmxReport reads JmxTool's one-time csv report: the time, and
// the counts of every matching object summed.
func TestParseJmxReport(t *testing.T) {
	out := "Trying to connect to JMX url: service:jmx:rmi:///jndi/rmi://127.0.0.1:9999/jmxrmi\n" +
		"time,\"1796649445810\"\n" +
		"kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,version=11:Count,\"40\"\n" +
		"kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,version=17:Count,\"2\"\n"
	if ms, count, ok := parseJmxReport(out); !ok || ms != 1796649445810 || count != 42 {
		t.Errorf("parseJmxReport = %d, %v, %v; want 1796649445810, 42, true", ms, count, ok)
	}
	// no fetch yet: no object matches, the count is 0
	none := "time,\"1796649445810\"\nNo matched attributes for the queried objects [x].\n"
	if _, count, ok := parseJmxReport(none); !ok || count != 0 {
		t.Errorf("no objects: count %v, ok %v; want 0, true", count, ok)
	}
	if _, _, ok := parseJmxReport("Could not connect\n"); ok {
		t.Error("a report without its time must not be ok")
	}
}
