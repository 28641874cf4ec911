package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"projector/internal/kafkalag"
)

// The reader against kfake, written by a franz-go transactional producer.

// cluster starts kfake with topic t of n partitions.
func cluster(t *testing.T, n int) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(n), "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// producer is a franz-go client writing to t's partitions by hand; with
// txnID, transactional.
func producer(t *testing.T, brokers []string, txnID string) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes values to partition p and waits for the acknowledgements.
func produce(t *testing.T, cl *kgo.Client, p int32, values ...string) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Partition: p, Key: []byte("k"), Value: []byte(v)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// txn writes values to partition p in one transaction and ends it with
// commit or abort.
func txn(t *testing.T, cl *kgo.Client, p int32, commit bool, values ...string) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, p, values...)
	if err := cl.EndTransaction(context.Background(), kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// options reads brokers with a Transport of its own.
func options(t *testing.T, brokers []string) Options {
	tr := &kafka.Transport{MetadataTTL: time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return Options{Addr: kafka.TCP(brokers...), Transport: tr, MaxWait: 100 * time.Millisecond, MaxBytes: 1 << 20}
}

// highWatermark is the end of t's partition p, transaction markers included.
func highWatermark(t *testing.T, brokers []string, p int) int64 {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	res, err := client.ListOffsets(context.Background(), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{"t": {kafka.LastOffsetOf(p)}}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Topics["t"][0].LastOffset
}

// coverage checks that msgs (one partition's, in order) cover the offsets
// from..to-1 exactly once, and returns the records' values.
func coverage(t *testing.T, msgs []kafka.Message, from, to int64) []string {
	t.Helper()
	next := from
	var values []string
	for _, m := range msgs {
		first, skipped := SkippedOf(m)
		if !skipped {
			first = m.Offset
			values = append(values, string(m.Value))
		}
		if first != next || m.Offset < first {
			t.Fatalf("message %s covers %d-%d, want it to begin at %d", describe([]kafka.Message{m}), first, m.Offset, next)
		}
		next = m.Offset + 1
	}
	if next != to {
		t.Fatalf("messages cover offsets %d-%d, want up to %d", from, next-1, to-1)
	}
	return values
}

// TestReaderReadsCommittedOnly: committed transactions, records written
// outside transactions and aborted transactions in one partition, then a
// transaction left open: the Reader returns the committed records and the
// others only, with placeholders covering every other offset, waits at the
// open transaction, and goes on once it commits.
func TestReaderReadsCommittedOnly(t *testing.T) {
	brokers := cluster(t, 1)
	tx, plain := producer(t, brokers, "tx"), producer(t, brokers, "")
	txn(t, tx, 0, true, "c1", "c2")
	produce(t, plain, 0, "p1")
	txn(t, tx, 0, false, "a1", "a2")
	txn(t, tx, 0, true, "c3")
	txn(t, tx, 0, false, "a3")
	produce(t, plain, 0, "p2")

	// A transaction left open: the records after it wait.
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, tx, 0, "o1")
	produce(t, plain, 0, "p3")

	r := NewReader(options(t, brokers), "t", 0, kafka.FirstOffset)
	ctx := context.Background()
	var msgs []kafka.Message
	for {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		m, err := r.Next(wctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break // waiting at the open transaction
		}
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	lso := r.Offset()
	if got, want := coverage(t, msgs, 0, lso), []string{"c1", "c2", "p1", "c3", "p2"}; !slices.Equal(got, want) {
		t.Fatalf("before the commit: read %q, want %q", got, want)
	}
	for _, m := range msgs {
		if m.HighWaterMark != lso {
			t.Errorf("message %d: HighWaterMark %d, want the last stable offset %d", m.Offset, m.HighWaterMark, lso)
		}
	}

	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	end := highWatermark(t, brokers, 0)
	for r.Offset() < end || len(r.queue) > 0 {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := r.Next(wctx)
		cancel()
		if err != nil {
			t.Fatalf("after the commit: %v", err)
		}
		msgs = append(msgs, m)
	}
	if got, want := coverage(t, msgs, 0, end), []string{"c1", "c2", "p1", "c3", "p2", "o1", "p3"}; !slices.Equal(got, want) {
		t.Fatalf("after the commit: read %q, want %q", got, want)
	}
	if _, ok := SkippedOf(msgs[len(msgs)-1]); !ok {
		t.Errorf("the log ends with a commit marker, the last message is %s", describe(msgs[len(msgs)-1:]))
	}
}

// TestReaderWaitsPastTheEnd: an offset past the end of the partition
// (OFFSET_OUT_OF_RANGE) is waited on without an error, and read once the
// partition reaches it.
func TestReaderWaitsPastTheEnd(t *testing.T) {
	brokers := cluster(t, 1)
	plain := producer(t, brokers, "")
	produce(t, plain, 0, "r0", "r1", "r2", "r3")
	r := NewReader(options(t, brokers), "t", 0, 6)
	wctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, err := r.Next(wctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next past the end: %v, want it to wait", err)
	}
	produce(t, plain, 0, "r4", "r5", "r6")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Offset != 6 || string(m.Value) != "r6" {
		t.Fatalf("first message at %d %q, want r6 at 6", m.Offset, m.Value)
	}
}

// TestGroupCommitsPastMarkers: a group member that read everything and
// committed its last messages has lag 0, also when the log ends with a
// commit or an abort marker.
func TestGroupCommitsPastMarkers(t *testing.T) {
	brokers := cluster(t, 2)
	tx, plain := producer(t, brokers, "tx"), producer(t, brokers, "")
	produce(t, plain, 0, "p1")
	txn(t, tx, 0, true, "c1", "c2") // partition 0 ends with a commit marker
	txn(t, tx, 1, true, "c3")
	txn(t, tx, 1, false, "a1") // partition 1 with an abort marker

	g := NewGroup(GroupConfig{Brokers: brokers, GroupID: "g", Topics: []string{"t"}, Fetch: options(t, brokers),
		HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second})
	defer g.Close()
	ends := map[int]int64{0: highWatermark(t, brokers, 0), 1: highWatermark(t, brokers, 1)}
	byPart := map[int][]kafka.Message{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	last := map[int]kafka.Message{}
	for len(last) < 2 || last[0].Offset < ends[0]-1 || last[1].Offset < ends[1]-1 {
		m, err := g.FetchMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byPart[m.Partition] = append(byPart[m.Partition], m)
		last[m.Partition] = m
	}
	if got := coverage(t, byPart[0], 0, ends[0]); !slices.Equal(got, []string{"p1", "c1", "c2"}) {
		t.Errorf("partition 0: %q", got)
	}
	if got := coverage(t, byPart[1], 0, ends[1]); !slices.Equal(got, []string{"c3"}) {
		t.Errorf("partition 1: %q", got)
	}
	if err := g.CommitMessages(ctx, last[0], last[1]); err != nil {
		t.Fatal(err)
	}
	ps, err := kafkalag.Measure(ctx, &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}, "g", []string{"t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Lag != 0 || p.Committed != ends[p.Partition] {
			t.Errorf("partition %d: committed %d, end %d, lag %d; want committed %d, lag 0", p.Partition, p.Committed, p.End, p.Lag, ends[p.Partition])
		}
	}
}

// TestGroupRebalance: a second member joins; the partitions are shared
// between the two, each new record reaches exactly one member (the one the
// partition is assigned to now), and the new member starts at the offsets
// the first committed. When the first leaves, the second takes everything.
func TestGroupRebalance(t *testing.T) {
	brokers := cluster(t, 2)
	plain := producer(t, brokers, "")
	produce(t, plain, 0, "a0")
	produce(t, plain, 1, "b0")
	cfg := GroupConfig{Brokers: brokers, GroupID: "g", Topics: []string{"t"}, Fetch: options(t, brokers),
		HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 6 * time.Second, RebalanceTimeout: 6 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	g1 := NewGroup(cfg)
	defer g1.Close()
	var first []kafka.Message
	for len(first) < 2 {
		m, err := g1.FetchMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, m)
	}
	if err := g1.CommitMessages(ctx, first...); err != nil {
		t.Fatal(err)
	}

	// Both members read what comes now; each record is told by who got it.
	g2 := NewGroup(cfg)
	defer g2.Close()
	var mu sync.Mutex
	got := map[string][]string{} // value -> members
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for name, g := range map[string]*Group{"g1": g1, "g2": g2} {
		wg.Go(func() {
			for {
				m, err := g.FetchMessage(rctx)
				if rctx.Err() != nil {
					return
				}
				if err != nil {
					continue
				}
				if _, skipped := SkippedOf(m); skipped {
					continue
				}
				mu.Lock()
				got[string(m.Value)] = append(got[string(m.Value)], name)
				mu.Unlock()
				if err := g.CommitMessages(rctx, m); err != nil && rctx.Err() == nil {
					t.Logf("%s: commit: %v", name, err)
				}
			}
		})
	}
	// Once the rebalance is over, records go to one member each.
	deadline := time.Now().Add(40 * time.Second)
	i := 0
	for ; time.Now().Before(deadline); i++ {
		produce(t, plain, 0, fmt.Sprintf("a%d", i+1))
		produce(t, plain, 1, fmt.Sprintf("b%d", i+1))
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		a, b := got[fmt.Sprintf("a%d", i+1)], got[fmt.Sprintf("b%d", i+1)]
		mu.Unlock()
		if len(a) == 1 && len(b) == 1 && a[0] != b[0] {
			break
		}
	}
	stop()
	wg.Wait()
	if !time.Now().Before(deadline) {
		t.Fatalf("the two members never shared the partitions: %v", got)
	}
	if _, again := got["a0"]; again {
		t.Errorf("a0, committed by g1 before the rebalance, was read again: %v", got["a0"])
	}
	t.Logf("shared after %d rounds", i+1)
}

// countingTransport counts the fetch requests it sends, the partitions each
// one asks for, when it was sent, and whether its answer had records.
type countingTransport struct {
	kafka.RoundTripper
	mu       sync.Mutex
	sizes    []int // partitions per fetch request, in order
	requests []sentFetch
}

// sentFetch is when a fetch request was sent and answered, and whether its
// answer had records past the offsets asked for.
type sentFetch struct {
	at, answered time.Time
	records      bool
}

func (c *countingTransport) RoundTrip(ctx context.Context, addr net.Addr, req kafka.Request) (kafka.Response, error) {
	f, ok := req.(*fetchapi.Request)
	if !ok {
		return c.RoundTripper.RoundTrip(ctx, addr, req)
	}
	n := 0
	from := map[int32]int64{}
	for _, t := range f.Topics {
		n += len(t.Partitions)
		for _, p := range t.Partitions {
			from[p.Partition] = p.FetchOffset
		}
	}
	w := sentFetch{at: time.Now()}
	res, err := c.RoundTripper.RoundTrip(ctx, addr, req)
	if r, ok := res.(*fetchapi.Response); ok && err == nil {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				w.records = w.records || p.HighWatermark > from[p.Partition]
			}
		}
	}
	w.answered = time.Now()
	c.mu.Lock()
	c.sizes = append(c.sizes, n)
	c.requests = append(c.requests, w)
	c.mu.Unlock()
	return res, err
}

// countedGroup is a member of group g reading topic t with opts through a
// countingTransport; the test's end closes it.
func countedGroup(t *testing.T, brokers []string, opts Options) (*Group, *countingTransport) {
	ct := &countingTransport{RoundTripper: opts.Transport}
	opts.Transport = ct
	g := NewGroup(GroupConfig{Brokers: brokers, GroupID: "g", Topics: []string{"t"}, Fetch: opts,
		HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second})
	t.Cleanup(func() { _ = g.Close() })
	return g, ct
}

// TestGroupFetchesEveryPartitionInOneRequest: a member of 6 partitions on
// one broker reads them all with one fetch request at a time, each asking
// for every partition, and gets every record of each partition in order.
func TestGroupFetchesEveryPartitionInOneRequest(t *testing.T) {
	const parts = 6
	brokers := cluster(t, parts)
	plain := producer(t, brokers, "")
	for p := range int32(parts) {
		produce(t, plain, p, fmt.Sprintf("%d-0", p), fmt.Sprintf("%d-1", p))
	}
	opts := options(t, brokers)
	g, ct := countedGroup(t, brokers, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byPart := map[int][]string{}
	for n := 0; n < 2*parts; n++ {
		m, err := g.FetchMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byPart[m.Partition] = append(byPart[m.Partition], string(m.Value))
	}
	for p := range parts {
		if want := []string{fmt.Sprintf("%d-0", p), fmt.Sprintf("%d-1", p)}; !slices.Equal(byPart[p], want) {
			t.Errorf("partition %d: %q, want %q", p, byPart[p], want)
		}
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if len(ct.sizes) == 0 {
		t.Fatal("no fetch request was counted")
	}
	for i, n := range ct.sizes {
		if n != parts {
			t.Errorf("fetch request %d asked for %d partitions, want all %d", i, n, parts)
		}
	}
}

// TestGroupPacesWhileRecordsFlow: a member's fetch request that follows an
// answer with records is sent at least Pace after the one before; one that
// follows an empty answer is sent as soon as it came.
func TestGroupPacesWhileRecordsFlow(t *testing.T) {
	const parts = 3
	const pace = 80 * time.Millisecond
	brokers := cluster(t, parts)
	plain := producer(t, brokers, "")
	opts := options(t, brokers)
	opts.Pace = pace
	g, ct := countedGroup(t, brokers, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := range 3 {
		for p := range int32(parts) {
			produce(t, plain, p, fmt.Sprintf("%d-%d", p, round))
		}
		for range parts {
			if _, err := g.FetchMessage(ctx); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(300 * time.Millisecond) // an empty answer after MaxWait
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	paced, quick := 0, 0
	for i := 1; i < len(ct.requests); i++ {
		prev := ct.requests[i-1]
		gap := ct.requests[i].at.Sub(prev.at)
		switch {
		case prev.records && gap < pace*9/10: // the transport sees a request a little after the loop sent it
			t.Errorf("fetch request %d was sent %v after one answered with records, want about %v at least", i, gap, pace)
		case prev.records:
			paced++
		case ct.requests[i].at.Sub(prev.answered) < pace/2:
			quick++
		}
	}
	if paced == 0 || quick == 0 {
		t.Errorf("%d requests paced and %d sent at once after an empty answer, want both (%d requests)", paced, quick, len(ct.requests))
	}
}

// TestGroupLosesNothingWhenLeadersMove: partitions of a 3-broker cluster
// change leaders while a member with a one-message queue reads them (its
// fetch loops wait on delivery when a regroup ends them): every partition
// still yields each of its records once, in order.
func TestGroupLosesNothingWhenLeadersMove(t *testing.T) {
	const parts, per = 6, 150
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(parts, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	plain := producer(t, brokers, "")
	for p := range int32(parts) {
		var values []string
		for i := range per {
			values = append(values, fmt.Sprintf("%d-%d", p, i))
		}
		produce(t, plain, p, values...)
	}
	g := NewGroup(GroupConfig{Brokers: brokers, GroupID: "g", Topics: []string{"t"}, Fetch: options(t, brokers), QueueCapacity: 1,
		HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second})
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	moving, stop := context.WithCancel(ctx)
	defer stop()
	var moves atomic.Int64
	go func() {
		for i := 0; moving.Err() == nil; i++ {
			p := int32(i % parts)
			if err := c.MoveTopicPartition("t", p, (c.LeaderFor("t", p)+1)%3); err == nil {
				moves.Add(1)
			}
			time.Sleep(15 * time.Millisecond)
		}
	}()
	byPart := map[int][]string{}
	for n := 0; n < parts*per; n++ {
		m, err := g.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("after %d records: %v", n, err)
			}
			n--
			continue // a fetch failure reported while leaders move
		}
		byPart[m.Partition] = append(byPart[m.Partition], string(m.Value))
		if n%50 == 0 {
			time.Sleep(10 * time.Millisecond) // a slow consumer: the loops wait on delivery
		}
	}
	stop()
	for p := range parts {
		want := make([]string, per)
		for i := range want {
			want[i] = fmt.Sprintf("%d-%d", p, i)
		}
		if !slices.Equal(byPart[p], want) {
			t.Errorf("partition %d: %d records, first differences from %d in order", p, len(byPart[p]), per)
		}
	}
	if n := moves.Load(); n < 5 {
		t.Errorf("only %d leader moves: the test moved too little", n)
	}
}
