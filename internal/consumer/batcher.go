package consumer

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
)

// Batching runs beside the applier, so Kafka is read while Redis applies the
// previous batch: a pump goroutine fetches records one by one, and the
// batcher gathers them into batches of at most MaxEvents.
//
// Behind the log (a backlog: the newest record is far from its partition's
// high watermark), records are gathered per partition number, and a batch is
// one partition number's MaxEvents records (of every topic). Producers key
// events by user, so such a batch holds a quarter of the users of a
// four-partition topic, each with more events: fewer script calls per event.
// Caught up with the log (or when no record came for MaxWait), everything
// gathered goes to the applier as soon as it is free and MaxWait has passed
// since the first record: live traffic waits about MaxWait plus one apply.

// pump fetches records until ctx ends. A failed fetch (a broker restarting,
// the group coordinator moving: kafka-go keeps reconnecting) is counted,
// logged and retried with backoff.
func (c *Consumer) pump(ctx context.Context, out chan<- kafka.Message) {
	backoff := fetchBackoffMin
	for {
		m, err := c.reader.FetchMessage(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.metrics.KafkaFetchErrors.Inc()
			c.log.Warn("fetch from Kafka failed; retrying", zap.Error(err), zap.Duration("backoff", backoff))
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, fetchBackoffMax)
			continue
		}
		backoff = fetchBackoffMin
		select {
		case out <- m:
		case <-ctx.Done():
			return
		}
	}
}

// behindBy is how far (in records) the newest record may be from its
// partition's high watermark for the consumer to count as caught up.
func behindBy(maxEvents int) int64 { return int64(max(maxEvents/4, 1)) }

// gathered is what the batcher holds: records by partition number, each
// partition's in offset order.
type gathered struct {
	parts map[int][]kafka.Message
	total int
	full  int // a partition number holding MaxEvents records, or -1
}

func (g *gathered) add(m kafka.Message, maxEvents int) {
	b := g.parts[m.Partition]
	if b == nil {
		b = make([]kafka.Message, 0, min(maxEvents, 1024))
	}
	g.parts[m.Partition] = append(b, m)
	g.total++
	if len(b)+1 >= maxEvents && g.full < 0 {
		g.full = m.Partition
	}
}

// take removes and returns the next batch: the full partition's records, or
// everything when that fits in maxEvents, or else the largest partition's.
func (g *gathered) take(maxEvents int) []kafka.Message {
	p := g.full
	if p < 0 && g.total <= maxEvents {
		out := make([]kafka.Message, 0, g.total)
		for _, b := range g.parts {
			out = append(out, b...)
		}
		clear(g.parts)
		g.total = 0
		return out
	}
	if p < 0 {
		for q, b := range g.parts {
			if p < 0 || len(b) > len(g.parts[p]) {
				p = q
			}
		}
	}
	out := g.parts[p]
	delete(g.parts, p)
	g.total -= len(out)
	g.full = -1
	for q, b := range g.parts {
		if len(b) >= maxEvents {
			g.full = q
		}
	}
	return out
}

// batch gathers the pump's records until ctx ends, and answers each request
// of the applier on want with a batch on out, once it has one to give.
func (c *Consumer) batch(ctx context.Context, in <-chan kafka.Message, want <-chan struct{}, out chan<- []kafka.Message) {
	var (
		g       = gathered{parts: map[int][]kafka.Message{}, full: -1}
		timer   = time.NewTimer(time.Hour)
		waiting bool // the timer runs for what is gathered
		open    bool // everything gathered may go to a free applier
		behind  bool // the newest record is far from its high watermark
		quiet   bool // no record came since the timer was set
		wait    = max(c.opts.MaxWait, time.Millisecond)
	)
	timer.Stop()
	defer timer.Stop()
	for {
		recv := in
		if g.full >= 0 {
			recv = nil // a partition is full: wait for the applier
		}
		var asked <-chan struct{}
		if g.total > 0 && (g.full >= 0 || open) {
			asked = want
		}
		select {
		case <-ctx.Done():
			return
		case m := <-recv:
			if g.total == 0 {
				timer.Reset(wait)
				waiting, open = true, false
			}
			g.add(m, c.opts.MaxEvents)
			behind = m.HighWaterMark-m.Offset-1 >= behindBy(c.opts.MaxEvents)
			quiet = false
		case <-timerC(timer, waiting):
			if !behind || quiet {
				waiting, open = false, true
			} else {
				quiet = true // look again after another wait
				timer.Reset(wait)
			}
		case <-asked:
			select {
			case out <- g.take(c.opts.MaxEvents):
			case <-ctx.Done():
				return
			}
			if g.total == 0 {
				timer.Stop()
				waiting, open = false, false
			}
		}
	}
}

// timerC is t's channel while on, else nil (a case that never fires).
func timerC(t *time.Timer, on bool) <-chan time.Time {
	if on {
		return t.C
	}
	return nil
}
