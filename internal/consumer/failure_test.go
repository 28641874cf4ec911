package consumer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"projector/internal/obs"
)

// TestRetryCountsWhatFailed runs retry with a step that fails once and checks
// that the failure is counted under the metric naming what failed: Kafka
// commit and dead-letter failures are no Redis errors, and a step cut short
// by its context counts nothing.
func TestRetryCountsWhatFailed(t *testing.T) {
	for _, tc := range []struct {
		step    string
		fail    func(m *obs.Metrics) error
		counted func(m *obs.Metrics) prometheus.Counter // nil: nothing but the step's Redis counters
		redis   float64                                 // projector_redis_errors_total{op=step} and retries
	}{
		{step: "apply", fail: func(*obs.Metrics) error { return errors.New("READONLY You can't write against a read only replica") },
			redis: 1},
		{step: "commit", fail: func(m *obs.Metrics) error {
			return kafkaFailed(m.KafkaCommitErrors, errors.New("[27] Rebalance In Progress"))
		}, counted: func(m *obs.Metrics) prometheus.Counter { return m.KafkaCommitErrors }},
		{step: "dead-letter", fail: func(m *obs.Metrics) error {
			return fmt.Errorf("dead-letter batch: %w", kafkaFailed(m.DeadLetterErrors, errors.New("[6] Not Leader For Partition")))
		}, counted: func(m *obs.Metrics) prometheus.Counter { return m.DeadLetterErrors }},
		{step: "repair", fail: func(m *obs.Metrics) error {
			return kafkaFailed(m.KafkaFetchErrors, errors.New("read shop.views:3 again: EOF"))
		}, counted: func(m *obs.Metrics) prometheus.Counter { return m.KafkaFetchErrors }},
		{step: "apply", fail: func(*obs.Metrics) error { return fmt.Errorf("apply user: %w", context.Canceled) }},
	} {
		t.Run(tc.step, func(t *testing.T) {
			m := obs.NewMetrics()
			c := &Consumer{metrics: m, health: obs.NewHealth(m), log: zap.NewNop()}
			calls := 0
			err := c.retry(context.Background(), tc.step, func(context.Context) error {
				calls++
				if calls == 1 {
					return tc.fail(m)
				}
				return nil
			})
			if err != nil || calls != 2 {
				t.Fatalf("retry = %v after %d calls, want nil after 2", err, calls)
			}
			if got := value(t, m.RedisErrors.WithLabelValues(tc.step)); got != tc.redis {
				t.Errorf("projector_redis_errors_total{op=%q} = %v, want %v", tc.step, got, tc.redis)
			}
			if got := value(t, m.RedisRetries); got != tc.redis {
				t.Errorf("projector_redis_retries_total = %v, want %v", got, tc.redis)
			}
			for _, k := range []prometheus.Counter{m.KafkaCommitErrors, m.DeadLetterErrors, m.KafkaFetchErrors} {
				want := 0.0
				if tc.counted != nil && tc.counted(m) == k {
					want = 1
				}
				if got := value(t, k); got != want {
					t.Errorf("%s = %v, want %v", k.Desc(), got, want)
				}
			}
			if ready, _ := c.health.Ready(); !ready {
				t.Error("not ready after the step recovered")
			}
		})
	}
}

// value returns a counter's value.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatalf("read %s: %v", c.Desc(), err)
	}
	return d.GetCounter().GetValue()
}
