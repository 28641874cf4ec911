package bench

import (
	"context"
	"strings"
	"testing"
	"time"
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
	lat := Latencies{}
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	r := Result{Consumer: Throughput{Rate: 52000.4, RedisCPU: 11.5, ConsumerCPU: 5.25}, Naive: 2600, Replay: 150000, Latency: lat}
	want := "bench: consumer=52000 ev/s naive=2600 ev/s ratio=20.0 redis_cpu=11.50/ev consumer_cpu=5.25/ev replay=150000 ev/s p50=51.0ms p99=100.0ms"
	if got := r.Line(); got != want {
		t.Errorf("line:\n%s\nwant:\n%s", got, want)
	}
	if (Result{}).Ratio() != 0 || (Latencies{}).Quantile(0.5) != 0 {
		t.Error("an empty result must not divide by zero")
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
