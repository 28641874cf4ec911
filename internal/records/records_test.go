package records

import (
	"fmt"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"projector/internal/fetch"
	"projector/internal/offsets"
	"projector/pkg/events"
)

func click(t *testing.T, id string) []byte {
	t.Helper()
	b, err := events.Encode(events.Event{ID: id, Type: events.Click, TS: 1_700_000_000_000, UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMaxBytes(t *testing.T) {
	if got, want := MaxBytes(1<<20), 10<<20; got != want {
		t.Errorf("MaxBytes(1 MiB) = %d, want %d", got, want)
	}
	if got, want := MaxBytes(8<<20), 17<<20; got != want {
		t.Errorf("MaxBytes(8 MiB) = %d, want %d", got, want)
	}
	if p, u := ProcessName(), UniqueName(); !strings.HasPrefix(u, p+"/") || u == UniqueName() {
		t.Errorf("UniqueName %q is not ProcessName %q with a random suffix", u, p)
	}
}

func TestSplit(t *testing.T) {
	msgs := []kafka.Message{
		{Topic: "a", Partition: 0, Offset: 5, Value: click(t, "e1")},
		{Topic: "b", Partition: 0, Offset: 9, Value: []byte("not json")},
		{Topic: "a", Partition: 0, Offset: 3, Value: click(t, "e2")},
		{Topic: "a", Partition: 1, Offset: 4, Value: make([]byte, 200)},
	}
	recs, bad, ranges := Split(msgs, 100)
	if len(recs) != 2 || recs[0].Event.ID != "e1" || recs[1].Offset != 3 {
		t.Errorf("records = %+v, want e1 at 5 and e2 at 3", recs)
	}
	if len(bad) != 2 || bad[0].Msg.Offset != 9 || bad[1].Msg.Offset != 4 || bad[0].Reason == "" || bad[1].Reason == "" {
		t.Errorf("poison = %+v, want offsets 9 and 4 with reasons", bad)
	}
	want := []offsets.Range{{Topic: "a", Partition: 0, First: 3, Last: 5}, {Topic: "b", Partition: 0, First: 9, Last: 9},
		{Topic: "a", Partition: 1, First: 4, Last: 4}}
	if fmt.Sprint(ranges) != fmt.Sprint(want) {
		t.Errorf("ranges = %v, want %v", ranges, want)
	}
	high := map[offsets.TopicPartition]kafka.Message{}
	AddHighest(high, msgs)
	if len(high) != 3 || high[offsets.TopicPartition{Topic: "a", Partition: 0}].Offset != 5 {
		t.Errorf("AddHighest = %v, want a:0 at 5 among 3 partitions", high)
	}
}

// TestSplitCountsSkippedOffsets: a placeholder of skipped offsets
// (transaction markers, records of aborted transactions) is neither an
// event nor poison; its partition's range covers every offset it stands
// for, and it is the highest message of its partition when it comes last.
func TestSplitCountsSkippedOffsets(t *testing.T) {
	msgs := []kafka.Message{
		fetch.Placeholder("a", 0, 10, 14, 20),
		{Topic: "a", Partition: 0, Offset: 15, Value: click(t, "e1")},
		fetch.Placeholder("a", 0, 16, 16, 20),
		fetch.Placeholder("b", 2, 7, 9, 10),
	}
	recs, bad, ranges := Split(msgs, 1000)
	if len(recs) != 1 || recs[0].Offset != 15 || len(bad) != 0 {
		t.Errorf("records %+v, poison %+v; want e1 at 15 only", recs, bad)
	}
	want := []offsets.Range{{Topic: "a", Partition: 0, First: 10, Last: 16}, {Topic: "b", Partition: 2, First: 7, Last: 9}}
	if fmt.Sprint(ranges) != fmt.Sprint(want) {
		t.Errorf("ranges = %v, want %v", ranges, want)
	}
	h := map[offsets.TopicPartition]kafka.Message{}
	AddHighest(h, msgs)
	if h[offsets.TopicPartition{Topic: "a", Partition: 0}].Offset != 16 || h[offsets.TopicPartition{Topic: "b", Partition: 2}].Offset != 9 {
		t.Errorf("AddHighest = %v, want a:0 at 16 and b:2 at 9", h)
	}
}

func TestDeadLetterNamesItsOrigin(t *testing.T) {
	p := Poison{Msg: kafka.Message{Topic: "views", Partition: 3, Offset: 42, Key: []byte("u1"), Value: []byte("x")}, Reason: "bad json"}
	m := DeadLetter(p)
	if string(m.Key) != "u1" || string(m.Value) != "x" {
		t.Errorf("dead letter key %q value %q, want the record's", m.Key, m.Value)
	}
	topic, part, off, ok := sourceOf(m)
	if !ok || topic != "views" || part != 3 || off != 42 {
		t.Errorf("sourceOf = %s %d %d %v, want views 3 42 true", topic, part, off, ok)
	}
	if _, _, _, ok := sourceOf(kafka.Message{}); ok {
		t.Error("a record without source headers has an origin")
	}
}
