// Package batching cuts a stream of Kafka records into batches of one
// partition number (of every topic) when it can: producers key events by
// user, so such a batch holds fewer users, each with more events, and the
// applier needs fewer script calls per event.
package batching

import "github.com/segmentio/kafka-go"

// Gatherer holds records by partition number, each partition's in offset
// order, until they are taken as batches of at most Size records.
type Gatherer struct {
	size  int
	parts map[int][]kafka.Message
	total int
	full  int         // a partition number holding Size records, or -1
	hint  map[int]int // capacity for a partition's next bucket: its records in the last batch
}

// New returns an empty Gatherer of batches of at most size records.
func New(size int) *Gatherer {
	return &Gatherer{size: max(size, 1), parts: map[int][]kafka.Message{}, full: -1, hint: map[int]int{}}
}

// Len is the number of records held.
func (g *Gatherer) Len() int { return g.total }

// Full reports whether a partition number holds a whole batch.
func (g *Gatherer) Full() bool { return g.full >= 0 }

// Add holds m (records of one partition must come in offset order).
func (g *Gatherer) Add(m kafka.Message) {
	b := g.parts[m.Partition]
	if b == nil {
		// sized by the last batch: live batches hold a few records per
		// partition, and a larger bucket costs its zeroing on every batch
		b = make([]kafka.Message, 0, min(g.size, max(g.hint[m.Partition], 16)))
	}
	g.parts[m.Partition] = append(b, m)
	g.total++
	if len(b)+1 >= g.size && g.full < 0 {
		g.full = m.Partition
	}
}

// Take removes and returns the next batch (nil when nothing is held): a full
// partition number's records; else everything when it fits in one batch;
// else the records of the partition number holding most.
func (g *Gatherer) Take() []kafka.Message {
	if g.total == 0 {
		return nil
	}
	p := g.full
	if p < 0 && g.total <= g.size {
		out := make([]kafka.Message, 0, g.total)
		for q, b := range g.parts {
			out = append(out, b...)
			g.hint[q] = len(b)
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
	g.hint[p] = len(out)
	g.total -= len(out)
	g.full = -1
	for q, b := range g.parts {
		if len(b) >= g.size {
			g.full = q
		}
	}
	return out
}
