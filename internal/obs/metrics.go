package obs

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Values of the outcome label of Metrics.Events.
const (
	// OutcomeApplied: the event's effects were written.
	OutcomeApplied = "applied"
	// OutcomeDuplicate: an event with the same id was applied before.
	OutcomeDuplicate = "duplicate"
	// OutcomePoison: the record was dead-lettered (or counted as poison by
	// the replayer).
	OutcomePoison = "poison"
	// OutcomeSkipped: every write of the event would already have expired,
	// or no enabled projection uses it.
	OutcomeSkipped = "skipped"
)

// TypeUnknown is the type label of a poison record that did not decode far
// enough to know its type.
const TypeUnknown = "unknown"

// Values of the slot label of Metrics.ScriptCalls.
const (
	// SlotUser: a script call for one user's {u:<id>} slot group.
	SlotUser = "user"
	// SlotGlobal: a script call for the global {g} slot group.
	SlotGlobal = "global"
)

// Metrics holds every projector metric on its own registry (never the
// global default one), plus the Go runtime and process collectors.
type Metrics struct {
	// Registry holds all collectors below; /metrics serves it.
	Registry *prometheus.Registry

	// Events counts processed events: projector_events_total{type, outcome},
	// outcome one of applied, duplicate, poison, skipped; type "unknown" for
	// poison that did not decode.
	Events *prometheus.CounterVec
	// Duplicates counts events recognised as duplicates of an applied
	// event id: projector_duplicates_total.
	Duplicates prometheus.Counter
	// DeadLettered counts records written to the dead-letter topic, by
	// source topic: projector_dead_lettered_total{topic}.
	DeadLettered *prometheus.CounterVec
	// BatchDuration observes the wall time to apply one batch to Redis, in
	// seconds: projector_batch_duration_seconds (buckets 0.5ms..5s).
	BatchDuration prometheus.Histogram
	// BatchEvents observes the number of events per batch:
	// projector_batch_events.
	BatchEvents prometheus.Histogram
	// RedisErrors counts failed Redis operations by the step that ran them
	// (apply, repair, dead-letter, dead-letter mark): projector_redis_errors_total{op}.
	// Failures of Kafka operations in the same steps are counted by
	// KafkaFetchErrors, KafkaCommitErrors and DeadLetterErrors instead.
	RedisErrors *prometheus.CounterVec
	// KafkaFetchErrors counts reads from Kafka that failed: the consumer
	// group's fetches (the reader reconnects and the consumer goes on after
	// a pause) and the reads of records applied again after Redis went back
	// in time: projector_kafka_fetch_errors_total.
	KafkaFetchErrors prometheus.Counter
	// RedisRetries counts retries of Redis operations after an error:
	// projector_redis_retries_total.
	RedisRetries prometheus.Counter
	// Commits counts successful Kafka offset commits:
	// projector_commits_total.
	Commits prometheus.Counter
	// KafkaCommitErrors counts failed Kafka offset commits (each is retried):
	// projector_kafka_commit_errors_total.
	KafkaCommitErrors prometheus.Counter
	// DeadLetterErrors counts failed writes to and reads of the dead-letter
	// topic (each is retried; the batch waits): projector_dead_letter_errors_total.
	DeadLetterErrors prometheus.Counter
	// ConsumerLag is the number of messages between the committed (or
	// processed) offset and the end of each partition:
	// projector_consumer_lag{topic, partition}.
	ConsumerLag *prometheus.GaugeVec
	// LastAppliedEventTimestamp is the event time (ts) of the last applied
	// event, in Unix seconds: projector_last_applied_event_timestamp_seconds.
	LastAppliedEventTimestamp prometheus.Gauge
	// RedisDataLost is 1 while the consumer has concluded that Redis lost
	// its data and waits for a replay, else 0: projector_redis_data_lost.
	RedisDataLost prometheus.Gauge
	// RedisRollbacks counts the times Redis was found to hold an older state
	// than the records applied before (a restart from an older snapshot, a
	// lost AOF tail, a lagging replica promoted): projector_redis_rollbacks_total.
	RedisRollbacks prometheus.Counter
	// RollbackRecords is the number of records still to be applied again
	// after Redis went back in time: projector_redis_rollback_records.
	RollbackRecords prometheus.Gauge
	// RollbackReapplied counts records read again from Kafka and applied
	// again after Redis went back in time: projector_redis_rollback_reapplied_records_total.
	RollbackReapplied prometheus.Counter
	// EvictionPolicyAccepted is 1 when a Redis server's maxmemory-policy
	// evicts keys and redis.allow_eviction accepted it, else 0:
	// projector_redis_eviction_policy_accepted.
	EvictionPolicyAccepted prometheus.Gauge
	// RedisMasterChanges counts the times the Sentinels named another
	// master than the one the process wrote to (redis.mode sentinel: a
	// failover, planned or not): projector_redis_master_changes_total.
	RedisMasterChanges prometheus.Counter
	// Ready is 1 while the process reports ready, else 0: projector_ready.
	// Health keeps it in sync; set it through Health, not directly.
	Ready prometheus.Gauge
	// KeysWritten counts Redis writes applied by projections:
	// projector_keys_written_total.
	KeysWritten prometheus.Counter
	// ScriptCalls counts apply-script calls by slot group, slot "user" or
	// "global": projector_script_calls_total{slot}.
	ScriptCalls *prometheus.CounterVec
}

// batchDurationBuckets spans 0.5ms to 5s.
var batchDurationBuckets = []float64{
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
}

// batchEventsBuckets spans single events to large batches.
var batchEventsBuckets = []float64{
	1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
}

// NewMetrics creates all projector metrics and registers them, with the Go
// and process collectors, on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_events_total",
			Help: "Events processed, by event type and outcome (applied, duplicate, poison, skipped).",
		}, []string{"type", "outcome"}),
		Duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "projector_duplicates_total",
			Help: "Events recognised as duplicates of an already applied event id.",
		}),
		DeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_dead_lettered_total",
			Help: "Poison records written to the dead-letter topic, by source topic.",
		}, []string{"topic"}),
		BatchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "projector_batch_duration_seconds",
			Help:    "Time to apply one batch of events to Redis.",
			Buckets: batchDurationBuckets,
		}),
		BatchEvents: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "projector_batch_events",
			Help:    "Events per applied batch.",
			Buckets: batchEventsBuckets,
		}),
		RedisErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_redis_errors_total",
			Help: "Failed Redis operations, by the step that ran them (apply, repair, dead-letter, dead-letter mark).",
		}, []string{"op"}),
		KafkaFetchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "projector_kafka_fetch_errors_total",
			Help: "Reads from Kafka that failed (group fetches, and records read again after Redis went back in time); the consumer keeps reconnecting.",
		}),
		RedisRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "projector_redis_retries_total",
			Help: "Retries of Redis operations after an error.",
		}),
		Commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "projector_commits_total",
			Help: "Successful Kafka offset commits.",
		}),
		KafkaCommitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "projector_kafka_commit_errors_total",
			Help: "Failed Kafka offset commits (each is retried).",
		}),
		DeadLetterErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "projector_dead_letter_errors_total",
			Help: "Failed writes to and reads of the dead-letter topic (each is retried; the batch waits).",
		}),
		ConsumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "projector_consumer_lag",
			Help: "Messages between the consumer's position and the end of the partition.",
		}, []string{"topic", "partition"}),
		LastAppliedEventTimestamp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "projector_last_applied_event_timestamp_seconds",
			Help: "Event time of the last applied event, Unix seconds.",
		}),
		RedisDataLost: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "projector_redis_data_lost",
			Help: "1 while Redis is found to have lost its data and a replay is awaited, else 0.",
		}),
		RedisRollbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "projector_redis_rollbacks_total",
			Help: "Times Redis was found holding an older state than the records applied before (the lost records are applied again).",
		}),
		RollbackRecords: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "projector_redis_rollback_records",
			Help: "Records still to be applied again after Redis went back in time.",
		}),
		RollbackReapplied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "projector_redis_rollback_reapplied_records_total",
			Help: "Records read again from Kafka and applied again after Redis went back in time.",
		}),
		EvictionPolicyAccepted: NewEvictionPolicyAccepted(),
		RedisMasterChanges:     NewRedisMasterChanges(),
		Ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "projector_ready",
			Help: "1 while the process is ready, else 0.",
		}),
		KeysWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "projector_keys_written_total",
			Help: "Redis writes applied by projections.",
		}),
		ScriptCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_script_calls_total",
			Help: "Apply-script calls, by slot group (user or global).",
		}, []string{"slot"}),
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.Events, m.Duplicates, m.DeadLettered, m.BatchDuration, m.BatchEvents,
		m.RedisErrors, m.RedisRetries, m.KafkaFetchErrors, m.Commits, m.KafkaCommitErrors, m.DeadLetterErrors, m.ConsumerLag,
		m.LastAppliedEventTimestamp, m.RedisDataLost, m.RedisRollbacks, m.RollbackRecords, m.RollbackReapplied,
		m.EvictionPolicyAccepted, m.RedisMasterChanges, m.Ready, m.KeysWritten,
		m.ScriptCalls,
	)
	return m
}

// NewEvictionPolicyAccepted returns the gauge
// projector_redis_eviction_policy_accepted (the consumer's and the read
// API's): 1 when redis.allow_eviction accepted an evicting maxmemory-policy.
func NewEvictionPolicyAccepted() prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "projector_redis_eviction_policy_accepted",
		Help: "1 when a Redis server's maxmemory-policy evicts keys and redis.allow_eviction accepted it, else 0.",
	})
}

// NewRedisMasterChanges returns the counter
// projector_redis_master_changes_total (the consumer's and the read API's):
// the masters the Sentinels named after the first one (redis.mode sentinel).
func NewRedisMasterChanges() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "projector_redis_master_changes_total",
		Help: "Times the Sentinels named another Redis master than before (a failover, planned or not); redis.mode sentinel only.",
	})
}
