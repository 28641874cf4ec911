package fetch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
)

// Crafted fetch answers: batches built as kafka-go's decoder builds them.

const noProducer = -1

// data is a data batch of producer pid (transactional unless pid is
// noProducer) holding records at offsets from..to with values "v<offset>".
func data(pid int64, from, to int64) protocol.RecordReader {
	var recs []protocol.Record
	for o := from; o <= to; o++ {
		recs = append(recs, protocol.Record{Offset: o, Time: time.UnixMilli(1000 + o),
			Key: protocol.NewBytes([]byte("k")), Value: protocol.NewBytes(fmt.Appendf(nil, "v%d", o))})
	}
	var attrs protocol.Attributes
	if pid != noProducer {
		attrs = protocol.Transactional
	}
	return &protocol.RecordBatch{Attributes: attrs, BaseOffset: from, ProducerID: pid, Records: protocol.NewRecordReader(recs...)}
}

// marker is the control batch of producer pid at offset: a commit or an abort.
func marker(pid, offset int64, commit bool) protocol.RecordReader {
	typ := int16(controlAbort)
	if commit {
		typ = 1
	}
	cr := protocol.ControlRecord{Offset: offset, Time: time.UnixMilli(1000 + offset), Type: typ}
	return &protocol.ControlBatch{Attributes: protocol.Transactional | protocol.Control, BaseOffset: offset, ProducerID: pid,
		Records: protocol.NewRecordReader(cr.Record())}
}

// answer is a fetch answer with the batches, the aborted transactions
// (producer id, first offset pairs) and lso as the last stable offset.
func answer(lso int64, aborted [][2]int64, batches ...protocol.RecordReader) *fetchapi.ResponsePartition {
	p := &fetchapi.ResponsePartition{HighWatermark: lso + 5, LastStableOffset: lso,
		RecordSet: protocol.RecordSet{Records: &protocol.RecordStream{Records: batches}}}
	for _, a := range aborted {
		p.AbortedTransactions = append(p.AbortedTransactions, fetchapi.ResponseTransaction{ProducerID: a[0], FirstOffset: a[1]})
	}
	return p
}

// describe writes messages as "5" (record at 5) and "[0-3]" (placeholder of
// offsets 0 to 3), space separated.
func describe(msgs []kafka.Message) string {
	var parts []string
	for _, m := range msgs {
		if first, ok := SkippedOf(m); ok {
			parts = append(parts, fmt.Sprintf("[%d-%d]", first, m.Offset))
		} else {
			parts = append(parts, fmt.Sprint(m.Offset))
		}
	}
	return strings.Join(parts, " ")
}

func TestDecodeReadCommitted(t *testing.T) {
	const p7, p8 = 7, 8
	cases := []struct {
		name     string
		offset   int64
		p        *fetchapi.ResponsePartition
		want     string
		wantNext int64
	}{
		{"no transactions", 0, answer(3, nil, data(noProducer, 0, 2)), "0 1 2", 3},
		{"committed transaction", 0, answer(4, nil, data(p7, 0, 2), marker(p7, 3, true)), "0 1 2 [3-3]", 4},
		{"aborted transaction, then others", 0,
			answer(8, [][2]int64{{p7, 0}}, data(p7, 0, 2), marker(p7, 3, false), data(p8, 4, 5), marker(p8, 6, true), data(noProducer, 7, 7)),
			"[0-3] 4 5 [6-6] 7", 8},
		{"aborted and committed transactions interleaved", 0,
			answer(8, [][2]int64{{p7, 0}}, data(p7, 0, 1), data(p8, 2, 3), data(p7, 4, 5), marker(p7, 6, false), marker(p8, 7, true)),
			"[0-1] 2 3 [4-7]", 8},
		{"a producer aborts, then commits", 0,
			answer(6, [][2]int64{{p7, 0}}, data(p7, 0, 1), marker(p7, 2, false), data(p7, 3, 4), marker(p7, 5, true)),
			"[0-2] 3 4 [5-5]", 6},
		{"a producer aborts twice", 0,
			answer(6, [][2]int64{{p7, 3}, {p7, 0}}, data(p7, 0, 1), marker(p7, 2, false), data(p7, 3, 4), marker(p7, 5, false)),
			"[0-5]", 6},
		{"an aborted transaction begun before the fetch offset", 2,
			answer(6, [][2]int64{{p7, 0}}, data(p7, 2, 3), marker(p7, 4, false), data(noProducer, 5, 5)),
			"[2-4] 5", 6},
		{"a batch that begins before the fetch offset", 2,
			answer(5, nil, data(p8, 0, 3), marker(p8, 4, true)),
			"2 3 [4-4]", 5},
		{"an aborted transaction's records in a later answer", 0,
			answer(3, [][2]int64{{p7, 1}}, data(noProducer, 0, 0), data(p7, 1, 2)),
			"0 [1-2]", 3},
		{"a transaction that began after the batch is not aborted yet", 0,
			answer(5, [][2]int64{{p7, 3}}, data(p7, 0, 1), marker(p7, 2, true), data(p7, 3, 3), marker(p7, 4, false)),
			"0 1 [2-4]", 5},
		{"nothing", 4, answer(4, nil), "", 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgs, next, err := decode("t", 3, tc.offset, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(msgs); got != tc.want || next != tc.wantNext {
				t.Fatalf("got %q, next %d; want %q, next %d", got, next, tc.want, tc.wantNext)
			}
			for _, m := range msgs {
				if m.Topic != "t" || m.Partition != 3 || m.HighWaterMark != tc.p.LastStableOffset {
					t.Errorf("message %d: topic %q partition %d high watermark %d; want t, 3, the last stable offset %d",
						m.Offset, m.Topic, m.Partition, m.HighWaterMark, tc.p.LastStableOffset)
				}
				if _, ok := SkippedOf(m); !ok && (string(m.Value) != fmt.Sprintf("v%d", m.Offset) || string(m.Key) != "k" ||
					!m.Time.Equal(time.UnixMilli(1000+m.Offset))) {
					t.Errorf("record %d: key %q value %q time %v", m.Offset, m.Key, m.Value, m.Time)
				}
			}
		})
	}
}

func TestClampAndCovered(t *testing.T) {
	p := Placeholder("t", 0, 4, 9, 10)
	if Covered(p) != 6 || Covered(kafka.Message{Offset: 3}) != 1 {
		t.Fatalf("covered: %d, %d", Covered(p), Covered(kafka.Message{Offset: 3}))
	}
	if c, ok := Clamp(p, 6); !ok || c.Offset != 6 || Covered(c) != 3 {
		t.Errorf("clamp to 6: %v %v", c.Offset, ok)
	}
	if _, ok := Clamp(p, 3); ok {
		t.Errorf("a placeholder after the end is kept")
	}
	if c, ok := Clamp(p, 20); !ok || c.Offset != 9 {
		t.Errorf("clamp to 20: %v %v", c.Offset, ok)
	}
	if _, ok := Clamp(kafka.Message{Offset: 7}, 6); ok {
		t.Errorf("a record after the end is kept")
	}
}
