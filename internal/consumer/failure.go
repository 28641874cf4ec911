package consumer

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// kafkaError marks a failed Kafka operation inside a retried step (the
// offset commit, the dead-letter topic, records read again after Redis went
// back in time). The counter naming it counted it where it failed, so retry
// counts it neither as a Redis error nor as a Redis retry.
type kafkaError struct{ err error }

func (e *kafkaError) Error() string { return e.err.Error() }
func (e *kafkaError) Unwrap() error { return e.err }

// kafkaFailed counts a failed Kafka operation on counter and marks its error
// as a Kafka error; a nil error stays nil and counts nothing.
func kafkaFailed(counter prometheus.Counter, err error) error {
	if err == nil {
		return nil
	}
	counter.Inc()
	return &kafkaError{err}
}

// countFailure counts a failed attempt of step what: as a Redis error and
// retry unless a Kafka operation failed (already counted by kafkaFailed) or
// the step was cut short by its context ending (nothing failed). Every other
// operation a step runs (the apply script, the dead-letter gate, the
// bookkeeping keys) is a Redis one.
func (c *Consumer) countFailure(what string, err error) {
	var ke *kafkaError
	if errors.As(err, &ke) || errors.Is(err, context.Canceled) {
		return
	}
	c.metrics.RedisErrors.WithLabelValues(what).Inc()
	c.metrics.RedisRetries.Inc()
}
