package batching

import (
	"fmt"
	"testing"

	"github.com/segmentio/kafka-go"
)

// TestGatherer: every record comes out exactly once, in offset order within
// its topic and partition; a batch never exceeds the size; a full partition
// number goes alone; what fits in one batch goes together.
func TestGatherer(t *testing.T) {
	g := New(10)
	if g.Take() != nil || g.Full() || g.Len() != 0 {
		t.Fatal("a new gatherer is not empty")
	}
	var taken [][]kafka.Message
	n := 0
	for i := 0; i < 50; i++ {
		for _, topic := range []string{"a", "b"} {
			g.Add(kafka.Message{Topic: topic, Partition: i % 3, Offset: int64(i / 3)})
			n++
			if g.Full() {
				b := g.Take()
				if len(b) != 10 {
					t.Fatalf("full batch of %d records, want 10", len(b))
				}
				for _, m := range b {
					if m.Partition != b[0].Partition {
						t.Fatalf("a full batch mixes partitions %d and %d", b[0].Partition, m.Partition)
					}
				}
				taken = append(taken, b)
			}
		}
	}
	if g.Len()+10*len(taken) != n {
		t.Fatalf("held %d + taken %d != added %d", g.Len(), 10*len(taken), n)
	}
	for g.Len() > 0 {
		b := g.Take()
		if len(b) == 0 || len(b) > 10 {
			t.Fatalf("batch of %d records", len(b))
		}
		taken = append(taken, b)
	}
	last := map[string]int64{}
	seen := 0
	for _, b := range taken {
		for _, m := range b {
			k := fmt.Sprintf("%s/%d", m.Topic, m.Partition)
			if prev, ok := last[k]; ok && m.Offset != prev+1 {
				t.Fatalf("%s: offset %d after %d", k, m.Offset, prev)
			}
			last[k] = m.Offset
			seen++
		}
	}
	if seen != n {
		t.Fatalf("took %d records, added %d", seen, n)
	}

	g.Add(kafka.Message{Partition: 0})
	g.Add(kafka.Message{Partition: 1})
	g.Add(kafka.Message{Partition: 2})
	if b := g.Take(); len(b) != 3 {
		t.Fatalf("3 records of 3 partitions that fit in one batch came as %d", len(b))
	}
}
