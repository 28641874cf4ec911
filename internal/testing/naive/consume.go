package naive

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/pkg/events"
)

// ConsumeOptions configure Consume.
type ConsumeOptions struct {
	Brokers []string
	GroupID string
	Topics  []string
	// Limit stops Consume after this many records (0: run until ctx ends).
	Limit int64
	// Progress, when set, is called after every record with the records seen so far.
	Progress func(records int64)
}

// Counts is what Consume did.
type Counts struct {
	Records, Applied, Duplicates, Poison int64
}

// Consume reads the topics as a member of its own consumer group from the
// earliest offset and applies every record with a, one at a time. Poison
// records are counted and skipped (the baseline does not dead-letter).
// Offsets are committed once a second in the background (at-least-once).
func Consume(ctx context.Context, a *Applier, opts ConsumeOptions) (Counts, error) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:        opts.Brokers,
		GroupID:        opts.GroupID,
		GroupTopics:    opts.Topics,
		MinBytes:       1,
		MaxBytes:       10 << 20,
		MaxWait:        250 * time.Millisecond,
		QueueCapacity:  1000,
		CommitInterval: time.Second,
		StartOffset:    kafka.FirstOffset,
	})
	defer r.Close()
	var c Counts
	for opts.Limit == 0 || c.Records < opts.Limit {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return c, fmt.Errorf("fetch: %w", err)
		}
		c.Records++
		ev, err := events.Decode(m.Value)
		if err != nil {
			c.Poison++
		} else {
			applied, err := a.Apply(ctx, ev)
			if err != nil {
				return c, err
			}
			if applied {
				c.Applied++
			} else {
				c.Duplicates++
			}
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			return c, fmt.Errorf("commit: %w", err)
		}
		if opts.Progress != nil {
			opts.Progress(c.Records)
		}
	}
	return c, nil
}
