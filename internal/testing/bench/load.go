package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"projector/internal/gen"
)

// Topics are the consumer's default topics (views, clicks, orders).
var Topics = []string{"shop.views", "shop.clicks", "shop.orders"}

// LoadConfig describes the generated log.
type LoadConfig struct {
	// Events is the number of records (the generator's realistic mix,
	// duplicates and poison included).
	Events int
	// Users and Products are the population sizes.
	Users, Products int
	// End is the newest event time; events spread over the Span before it.
	End  time.Time
	Span time.Duration
}

// loadChunk is how many records one generator produces: the log is made of
// consecutive time windows, each from its own seeded generator, so it never
// has to be held in memory whole.
const loadChunk = 100_000

// NewProducer returns a franz-go client producing to brokers with the given linger.
func NewProducer(brokers []string, linger time.Duration) (*kgo.Client, error) {
	c, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(linger),
		kgo.MaxBufferedRecords(50_000), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	return c, nil
}

// Load produces cfg.Events generated records (keyed by user) and waits until
// Kafka acknowledged all of them.
func Load(ctx context.Context, p *kgo.Client, cfg LoadConfig) error {
	chunks := (cfg.Events + loadChunk - 1) / loadChunk
	start := cfg.End.Add(-cfg.Span)
	var failed produceFailure
	left := cfg.Events
	for k := range chunks {
		gc := gen.DefaultConfig()
		gc.Seed = uint64(k + 1)
		gc.Users, gc.Products = cfg.Users, cfg.Products
		gc.Span = cfg.Span / time.Duration(chunks)
		gc.Start = start.Add(time.Duration(k) * gc.Span)
		n := min(left, loadChunk)
		left -= n
		for _, r := range gen.New(gc).Log(n) {
			p.Produce(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value}, failed.done)
		}
	}
	return failed.flush(ctx, p)
}

// produceFailure keeps a failure of asynchronous produces (their promise is
// done).
type produceFailure struct {
	mu  sync.Mutex
	err error
}

// done records err when it is one.
func (f *produceFailure) done(_ *kgo.Record, err error) {
	if err != nil {
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
	}
}

// flush waits until Kafka acknowledged every record produced through p and
// returns the failure of any of them.
func (f *produceFailure) flush(ctx context.Context, p *kgo.Client) error {
	if err := p.Flush(ctx); err != nil {
		return fmt.Errorf("flush producer: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return fmt.Errorf("produce: %w", f.err)
	}
	return nil
}
