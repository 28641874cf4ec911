package consumer

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/batching"
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
// Caught up with the log (or when no record came for MaxWait, or after
// gathering for 20 x MaxWait: live traffic that fell a little behind must not
// wait for full batches), everything gathered goes to the applier as soon as
// it is free and MaxWait has passed since the first record: live traffic
// waits about MaxWait plus one apply.

// pump fetches records until ctx ends. A failed fetch (a broker restarting,
// the group coordinator moving: the group member keeps reconnecting) is counted,
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
// partition's high watermark for the consumer to count as caught up (the
// HighWaterMark of a fetched message is the last stable offset: the end of
// what a read_committed consumer can read).
func behindBy(maxEvents int) int64 { return int64(max(maxEvents/4, 1)) }

// batch gathers the pump's records until ctx ends, and answers each request
// of the applier on want with a batch on out, once it has one to give.
func (c *Consumer) batch(ctx context.Context, in <-chan kafka.Message, want <-chan struct{}, out chan<- []kafka.Message) {
	var (
		g       = batching.New(c.opts.MaxEvents)
		timer   = time.NewTimer(time.Hour)
		waiting bool // the timer runs for what is gathered
		open    bool // everything gathered may go to a free applier
		behind  bool // the newest record is far from its high watermark
		quiet   bool // no record came since the timer was set
		wait    = max(c.opts.MaxWait, time.Millisecond)
		since   time.Time // when the records held began to be gathered
	)
	timer.Stop()
	defer timer.Stop()
	for {
		recv := in
		if g.Full() {
			recv = nil // a partition is full: wait for the applier
		}
		var asked <-chan struct{}
		if g.Len() > 0 && (g.Full() || open) {
			asked = want
		}
		select {
		case <-ctx.Done():
			return
		case m := <-recv:
			if g.Len() == 0 {
				timer.Reset(wait)
				waiting, open, since = true, false, time.Now()
			}
			g.Add(m)
			behind = m.HighWaterMark-m.Offset-1 >= behindBy(c.opts.MaxEvents)
			quiet = false
		case <-timerC(timer, waiting):
			if !behind || quiet || time.Since(since) >= 20*wait {
				waiting, open = false, true
			} else {
				quiet = true // look again after another wait
				timer.Reset(wait)
			}
		case <-asked:
			select {
			case out <- g.Take():
			case <-ctx.Done():
				return
			}
			if g.Len() == 0 {
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
