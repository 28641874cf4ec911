// Package consumer runs the Kafka side of projector: it fetches records of
// the configured topics as a member of the consumer group, batches them,
// dead-letters poison records, has internal/apply write the projections, and
// commits offsets only after Redis accepted the batch.
package consumer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"projector/internal/apply"
	"projector/internal/kafkaconn"
	"projector/internal/logsample"
	"projector/internal/obs"
	"projector/internal/records"
)

// Options configure a Consumer.
type Options struct {
	Brokers []string
	// Kafka carries the brokers' SASL and TLS settings; nil means
	// kafkaconn.Plain(Brokers).
	Kafka          *kafkaconn.Conn
	GroupID        string
	Topics         []string
	DLQTopic       string
	MaxRecordBytes int
	MaxEvents      int
	MaxWait        time.Duration
	// MetaKey names px:meta:{g} (with the key prefix) in log lines.
	MetaKey string
	// MetaInfo is recorded in px:meta:{g} when a first start creates it.
	MetaInfo map[string]string
	// Publish, when set, is called every few seconds to publish the
	// consumer's settings (so a replayer can check it agrees) and the pause
	// token it acknowledges, and Withdraw when the consumer stops.
	Publish  func(ctx context.Context, ack string) error
	Withdraw func(ctx context.Context) error
	// Window is idempotency.window: records older than it are not applied
	// again after Redis went back in time (their duplicates may no longer be
	// recognised); the projections are marked for a replay instead.
	Window time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Reconnects, when set, counts the connections made to Redis: a new one
	// makes the consumer look again whether Redis went back in time.
	Reconnects func() uint64
	// ShutdownGrace bounds how long a batch in flight may still retry Redis
	// after the context ends (default 30s); past it the batch is left uncommitted.
	ShutdownGrace time.Duration
	// CommitEvery is the least time between two offset commits (default
	// 1s); the batches applied meanwhile are committed together.
	CommitEvery time.Duration
	// PoisonNote, when set, says why poison records are expected (the
	// embedded demo generates them): each is then logged at debug level,
	// and every interval gets one short summary line ending with the note.
	// Unset, the first records of each reason are warnings in full.
	PoisonNote string
}

// Applier is what the consumer needs of internal/apply.
type Applier interface {
	Apply(ctx context.Context, recs []apply.Record, ranges []apply.Range) (apply.Result, error)
	// Repair applies records again after Redis went back in time.
	Repair(ctx context.Context, recs []apply.Record, ranges []apply.Range) (apply.Result, error)
}

// DLQGate remembers which poison records were dead-lettered, so a redelivered
// batch does not dead-letter them again.
type DLQGate interface {
	// Done returns, per "topic:partition", the highest offset already dead-lettered.
	Done(ctx context.Context, fields []string) (map[string]int64, error)
	// Mark records that offsets up to offset of that partition are dead-lettered.
	Mark(ctx context.Context, marks map[string]int64) error
	// Claim makes owner the only one dead-lettering the partitions for ttl,
	// unless another owner's live claim stands: then it returns that owner.
	Claim(ctx context.Context, partitions []string, owner string, ttl time.Duration) (string, error)
	// Release drops owner's claims.
	Release(ctx context.Context, partitions []string, owner string) error
}

// Consumer is one member of the projector consumer group.
type Consumer struct {
	opts    Options
	kafka   Kafka
	reader  Reader // the current session's group member
	topics  *topicWatch
	applier Applier
	meta    Meta
	gate    DLQGate
	ready   readiness
	pause   pausing
	owner   string // names this consumer in dead-letter claims
	dlqView deadLetterView
	metrics *obs.Metrics
	health  *obs.Health
	log     *zap.Logger
	// poisonLog writes "poison record dead-lettered" for the first records
	// of each reason class per interval and a summary of the rest.
	poisonLog *logsample.Limiter
}

// New builds a consumer that reaches Kafka through kafka-go; Run starts it.
func New(opts Options, applier Applier, meta Meta, gate DLQGate, m *obs.Metrics, h *obs.Health, log *zap.Logger) *Consumer {
	return NewWith(opts, NewKafka(opts, log), applier, meta, gate, m, h, log)
}

// NewWith builds a consumer that reaches Kafka through k.
func NewWith(opts Options, k Kafka, applier Applier, meta Meta, gate DLQGate, m *obs.Metrics, h *obs.Health, log *zap.Logger) *Consumer {
	opts = opts.withDefaults()
	return &Consumer{opts: opts, kafka: k, applier: applier, meta: meta, gate: gate, metrics: m, health: h, log: log,
		owner: records.UniqueName(), topics: newTopicWatch(opts.Topics, h, log), ready: readiness{rebuilt: make(chan struct{}, 1)},
		poisonLog: newPoisonLog(log, opts.PoisonNote)}
}

// newPoisonLog is the limiter of the "poison record dead-lettered" lines:
// warnings, or with a note info summaries of debug lines.
func newPoisonLog(log *zap.Logger, note string) *logsample.Limiter {
	opts := logsample.Options{Level: zapcore.WarnLevel}
	if note != "" {
		opts = logsample.Options{Level: zapcore.InfoLevel, Brief: note}
	}
	return logsample.New(log, "poison record dead-lettered", "poison records dead-lettered", opts)
}

// withDefaults fills in the options left zero.
func (opts Options) withDefaults() Options {
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 30 * time.Second
	}
	if opts.CommitEvery <= 0 {
		opts.CommitEvery = time.Second
	}
	if opts.Kafka == nil {
		opts.Kafka = kafkaconn.Plain(opts.Brokers)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return opts
}

// Run consumes until ctx ends, then finishes the batch in flight, commits it
// and returns nil. It returns an error only when it cannot go on.
func (c *Consumer) Run(ctx context.Context) error {
	defer c.close()
	go c.poisonLog.Run(ctx)
	defer c.poisonLog.Flush() // the batch in flight may dead-letter after ctx ends
	client, closeClient := c.opts.Kafka.WatchClient(c.opts.Topics, topicPoll, 5*time.Second)
	defer closeClient()
	go c.topics.run(ctx, func(ctx context.Context) (topicMeta, error) { return readTopicMeta(ctx, client, c.opts.Topics) })
	if err := c.waitReady(ctx); err != nil {
		return nil
	}
	c.publish(ctx)
	if c.opts.Withdraw != nil {
		defer func() { _ = c.opts.Withdraw(context.WithoutCancel(ctx)) }()
	}
	go c.watchMeta(ctx)
	lostJobs := make(chan []lost)
	go c.watchRollback(ctx, lostJobs)
	c.log.Info("consuming", zap.Strings("topics", c.opts.Topics), zap.String("group", c.opts.GroupID),
		zap.Int("batch_max_events", c.opts.MaxEvents), zap.Duration("batch_max_wait", c.opts.MaxWait))
	var parts map[string]int
	for reread := false; ; {
		if !reread {
			var ok bool
			if parts, ok = c.topics.next(ctx, parts); !ok {
				return nil
			}
			if len(parts) == 0 {
				continue // every topic vanished: wait for one
			}
		}
		err := c.session(ctx, parts, lostJobs)
		if reread = errors.Is(err, errReread); reread {
			c.log.Info("projections rebuilt: reading again from the committed offsets")
			continue
		}
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// generation numbers the current session's group generation (0 without a session).
func (c *Consumer) generation() int64 {
	if c.reader == nil {
		return 0
	}
	return c.reader.Generation()
}

// Topics returns the configured topics that exist, for the lag monitor; nil
// until Run has read their metadata.
func (c *Consumer) Topics() []string { return c.topics.existing() }

// session consumes the topics of parts (topic -> partitions) as a group
// member of its own until ctx ends or the consumable topics change. Then it
// stops fetching, finishes the batch in flight, commits every batch it
// applied and leaves the group. Records fetched but not yet applied are
// dropped uncommitted: the next session (or another member) fetches them
// again from the committed offsets, as after any rebalance. Between batches
// it takes the lost records of lostJobs (see watchRollback).
func (c *Consumer) session(ctx context.Context, parts map[string]int, lostJobs <-chan []lost) error {
	var topics []string
	for _, t := range c.opts.Topics {
		if _, ok := parts[t]; ok {
			topics = append(topics, t)
		}
	}
	// c.reader is replaced only here, while no goroutine of a session runs.
	c.reader = c.kafka.Reader(topics)
	sctx, endSession := context.WithCancel(ctx)
	defer endSession()
	changed := make(chan struct{})
	go func() {
		if _, ok := c.topics.next(sctx, parts); ok {
			close(changed)
		}
	}()
	fctx, stopFetching := context.WithCancel(ctx)
	records := make(chan kafka.Message, 4096)
	want, batches := make(chan struct{}), make(chan []kafka.Message)
	var fetchers sync.WaitGroup
	fetchers.Go(func() { c.pump(fctx, records) })
	fetchers.Go(func() { c.batch(fctx, records, want, batches) })
	select {
	case <-c.ready.rebuilt: // this session reads from the committed offsets anyway
	default:
	}
	cm := c.startCommitter(ctx, c.reader)
	err := c.consume(ctx, changed, want, batches, lostJobs, cm)
	stopFetching()
	fetchers.Wait()
	if cerr := cm.close(); err == nil {
		err = cerr
	}
	if err == nil && ctx.Err() != nil {
		c.log.Info("stopped: batch in flight committed")
	}
	if cerr := c.reader.Close(); cerr != nil {
		c.log.Warn("close reader", zap.Error(cerr))
	}
	return err
}

// consume applies batch after batch until ctx ends, stop is closed or a
// batch cannot be applied. stop is looked at between batches only. Between
// batches it applies again the records that watchRollback found missing
// from Redis.
func (c *Consumer) consume(ctx context.Context, stop <-chan struct{}, want chan<- struct{}, batches <-chan []kafka.Message,
	lostJobs <-chan []lost, cm *committer) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case <-c.ready.rebuilt:
			return errReread
		case ls := <-lostJobs:
			if err := c.repairLost(ctx, ls); err != nil {
				return err
			}
			continue
		case want <- struct{}{}:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case msgs := <-batches:
			if err := c.process(ctx, msgs, cm); err != nil {
				return err
			}
		}
	}
}

// Backoff between failed fetches.
const (
	fetchBackoffMin = 100 * time.Millisecond
	fetchBackoffMax = 5 * time.Second
)

func (c *Consumer) close() {
	if err := c.kafka.DeadLetters.Close(); err != nil {
		c.log.Warn("close dead-letter writer", zap.Error(err))
	}
}
