package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// startBatcher runs a batcher and returns its input and a function that asks
// for the next batch (nil when none came within patience).
func startBatcher(t *testing.T, opts Options) (chan<- kafka.Message, func(patience time.Duration) []kafka.Message) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &Consumer{opts: opts}
	in := make(chan kafka.Message, 1000)
	want, out := make(chan struct{}), make(chan []kafka.Message)
	go c.batch(ctx, in, want, out)
	return in, func(patience time.Duration) []kafka.Message {
		select {
		case want <- struct{}{}:
		case <-time.After(patience):
			return nil
		}
		return <-out
	}
}

// TestBatcher: a batch never exceeds MaxEvents, records keep their order and
// none is lost, a partial batch goes to an idle applier only after MaxWait,
// and an empty batcher gives nothing.
func TestBatcher(t *testing.T) {
	in, get := startBatcher(t, Options{MaxEvents: 100, MaxWait: 20 * time.Millisecond})
	for i := 0; i < 250; i++ {
		in <- kafka.Message{Offset: int64(i)}
	}
	time.Sleep(50 * time.Millisecond)
	next := int64(0)
	for _, want := range []int{100, 100, 50} {
		b := get(time.Second)
		if len(b) != want {
			t.Fatalf("batch of %d records, want %d", len(b), want)
		}
		for _, m := range b {
			if m.Offset != next {
				t.Fatalf("record %d out of order or lost (got %d)", next, m.Offset)
			}
			next++
		}
	}

	in <- kafka.Message{Offset: next}
	start := time.Now()
	b := get(time.Second)
	if len(b) != 1 || b[0].Offset != next {
		t.Fatalf("got %v, want the one record %d", b, next)
	}
	if waited := time.Since(start); waited < 15*time.Millisecond {
		t.Fatalf("a partial batch went to an idle applier after %v, before max_wait", waited)
	}
	if b := get(50 * time.Millisecond); b != nil {
		t.Fatalf("an empty batcher handed over %d records", len(b))
	}

	// Behind the high watermark (a backlog): a partial batch waits to fill,
	// and goes only when no record came for another MaxWait.
	for i := 0; i < 10; i++ {
		next++
		in <- kafka.Message{Offset: next, HighWaterMark: next + 10000}
	}
	start = time.Now()
	b = get(time.Second)
	if len(b) != 10 {
		t.Fatalf("got %d records, want 10", len(b))
	}
	if waited := time.Since(start); waited < 35*time.Millisecond {
		t.Fatalf("a partial batch behind the high watermark went after %v, before two max_waits without records", waited)
	}
}

// TestBatcherByPartition: behind the log, a batch is one partition number's
// records (of every topic), each partition in offset order; caught up, what
// is gathered goes together.
func TestBatcherByPartition(t *testing.T) {
	in, get := startBatcher(t, Options{MaxEvents: 40, MaxWait: 10 * time.Millisecond})
	for i := 0; i < 60; i++ {
		for _, topic := range []string{"a", "b"} {
			in <- kafka.Message{Topic: topic, Partition: i % 3, Offset: int64(i / 3), HighWaterMark: 1e6}
		}
	}
	last := map[string]int64{}
	seen := 0
	for seen < 120 {
		b := get(time.Second)
		if b == nil {
			t.Fatalf("no batch after %d of 120 records", seen)
		}
		if len(b) > 40 {
			t.Fatalf("batch of %d records, more than max_events", len(b))
		}
		for _, m := range b {
			if m.Partition != b[0].Partition {
				t.Fatalf("a batch behind the log mixes partitions %d and %d", b[0].Partition, m.Partition)
			}
			k := m.Topic + string(rune('0'+m.Partition))
			if prev, ok := last[k]; ok && m.Offset != prev+1 {
				t.Fatalf("%s: offset %d after %d", k, m.Offset, prev)
			}
			last[k] = m.Offset
		}
		seen += len(b)
	}
	// Caught up: records of three partitions go in one batch.
	for p := 0; p < 3; p++ {
		in <- kafka.Message{Topic: "a", Partition: p, Offset: 100, HighWaterMark: 101}
	}
	if b := get(time.Second); len(b) != 3 {
		t.Fatalf("caught up: got %d records, want the 3 of three partitions together", len(b))
	}
}

// TestDropRepeats: records delivered again after a rebalance (an offset at or
// below one already in the batch for its partition) are dropped, the rest
// keep their order; a batch without repeats is returned as it is.
func TestDropRepeats(t *testing.T) {
	m := func(topic string, p int, o int64) kafka.Message {
		return kafka.Message{Topic: topic, Partition: p, Offset: o}
	}
	in := []kafka.Message{m("a", 0, 70), m("a", 0, 71), m("b", 0, 5), m("a", 1, 71), m("a", 0, 72),
		m("a", 0, 71), m("a", 0, 72), m("a", 0, 73), m("b", 0, 5), m("b", 0, 6)}
	want := []kafka.Message{m("a", 0, 70), m("a", 0, 71), m("b", 0, 5), m("a", 1, 71), m("a", 0, 72), m("a", 0, 73), m("b", 0, 6)}
	got := dropRepeats(in)
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Topic != want[i].Topic || got[i].Partition != want[i].Partition || got[i].Offset != want[i].Offset {
			t.Fatalf("record %d: got %s/%d/%d, want %s/%d/%d", i, got[i].Topic, got[i].Partition, got[i].Offset,
				want[i].Topic, want[i].Partition, want[i].Offset)
		}
	}
	clean := want[:4]
	if out := dropRepeats(clean); len(out) != 4 || &out[0] != &clean[0] {
		t.Fatal("a batch without repeats was copied or changed")
	}
}
