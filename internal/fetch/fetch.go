// Package fetch reads Kafka partitions as a read_committed consumer: only
// records of committed transactions and records written outside any
// transaction, in offset order. kafka-go's Reader sends isolation level 1
// but drops the fetch response's list of aborted transactions and passes
// control records on as messages, so this package sends its own fetch
// requests (kafka-go's protocol/fetch through a kafka.Transport, which
// routes each request to the partition's leader) and filters the response
// the way KIP-98 describes: a transactional batch of a producer whose
// aborted transaction (one of the response's (producer id, first offset)
// pairs) began at or before the batch's last offset is dropped, until that
// producer's abort marker; control batches (commit and abort markers) are
// dropped always.
//
// The broker answers a read_committed fetch up to the partition's last
// stable offset (LSO): the first offset of the oldest transaction still
// open, or the high watermark when none is. A Reader at the LSO waits there,
// fetch after fetch, until the transaction ends; a long open transaction
// holds back every record after it in the partition.
//
// Skipped offsets. The offsets of dropped records (markers and records of
// aborted transactions) hold nothing for the caller, but a consumer must be
// able to commit past them, and a range of offsets it applies must cover
// them. So for each run of skipped offsets not interrupted by a delivered
// record, a Reader delivers one placeholder message: Topic, Partition,
// HighWaterMark as for records, Offset the run's last offset, no key, no
// value, and WriterData a Skipped holding the run's first offset (no
// fetched record carries a WriterData). SkippedOf recognises it;
// internal/records.Split counts it in its batch's offset ranges only (it is
// neither an event nor poison), and committing it commits past the run.
//
// Every message's HighWaterMark is the partition's last stable offset as
// the fetch saw it: the end of what a read_committed reader can read.
//
// Errors. A Reader retries failed fetches with backoff; the Transport
// refreshes its metadata (the partition leaders) on its own, so a fetch
// after a leader change (NOT_LEADER_OR_FOLLOWER, a broker gone) reaches
// the new leader once the Transport knows it. Next reports an error only
// after Options.Attempts failures in a row, and goes on at the next call.
// An offset below the partition's first (retention) moves to the first
// offset, as kafka-go's Reader does; one past the end is waited on.
//
// Group is the consumer group member built on Readers: kafka-go's
// ConsumerGroup for membership (join, sync, heartbeats, commits), and one
// fetch request at a time per leader broker for all the assigned
// partitions it leads (as the Java consumer fetches), each partition's
// answer decoded by its Reader.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
)

// readCommitted is the fetch request's isolation level read_committed.
const readCommitted = 1

// controlAbort is the type of an abort marker's control record (a commit
// marker's is 1).
const controlAbort = 0

// requestTimeout bounds a request beyond its MaxWait.
const requestTimeout = 10 * time.Second

// Options configure Readers.
type Options struct {
	// Addr is the bootstrap brokers (kafka.TCP).
	Addr net.Addr
	// Transport sends the requests; it routes each fetch to the
	// partition's leader by the metadata it caches
	// (kafkaconn.Conn.FetchTransport refreshes it about every second).
	Transport kafka.RoundTripper
	// MinBytes and MaxBytes bound a fetch's answer (MinBytes default 1;
	// MaxBytes default 1 MiB, and the broker answers at least one batch
	// even when it is larger); MaxWait is how long the broker may wait for
	// MinBytes (default 250 ms).
	MinBytes int
	MaxBytes int
	MaxWait  time.Duration
	// Pace is the least time between a group member's request and the one
	// before when that one's answer had records: while records flow, the
	// member gathers them on the broker for up to Pace and sends one request
	// for them instead of one for each produce request (each answer costs
	// the broker CPU of its own). The request itself still asks for MinBytes,
	// so the broker answers it at once. Zero: no pace.
	Pace time.Duration
	// BackoffMin and BackoffMax bound the wait between failed fetches
	// (default 50 ms and 1 s), doubling from one to the next.
	BackoffMin, BackoffMax time.Duration
	// Attempts is the number of failed fetches in a row after which Next
	// returns the error (default 3).
	Attempts int
	// Logger and ErrorLogger, when set, log what happens and the failures
	// Next retries without returning them.
	Logger, ErrorLogger kafka.Logger
}

func (o Options) withDefaults() Options {
	if o.MinBytes <= 0 {
		o.MinBytes = 1
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 20
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 250 * time.Millisecond
	}
	if o.BackoffMin <= 0 {
		o.BackoffMin = 50 * time.Millisecond
	}
	if o.BackoffMax < o.BackoffMin {
		o.BackoffMax = max(time.Second, o.BackoffMin)
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	return o
}

func (o Options) logf(format string, args ...any) {
	if o.Logger != nil {
		o.Logger.Printf(format, args...)
	}
}

func (o Options) errorf(format string, args ...any) {
	switch {
	case o.ErrorLogger != nil:
		o.ErrorLogger.Printf(format, args...)
	case o.Logger != nil:
		o.Logger.Printf(format, args...)
	}
}

// Reader reads one partition from an offset on (see the package doc). It
// is not safe for concurrent use.
type Reader struct {
	opts      Options
	client    *kafka.Client
	topic     string
	partition int
	offset    int64           // the next offset to read; kafka.FirstOffset or kafka.LastOffset until resolved
	queue     []kafka.Message // read, not yet returned by Next
	retries   int             // fetches in a row that failed or found the offset past the end
	failures  int             // fetches in a row that failed
}

// NewReader returns a Reader of topic's partition starting at offset, or at
// the partition's first offset (kafka.FirstOffset) or its last stable
// offset (kafka.LastOffset).
func NewReader(opts Options, topic string, partition int, offset int64) *Reader {
	opts = opts.withDefaults()
	return &Reader{opts: opts, client: &kafka.Client{Addr: opts.Addr, Transport: opts.Transport, Timeout: requestTimeout},
		topic: topic, partition: partition, offset: offset}
}

// Offset returns the offset after the last one the Reader read (returned
// by Next or held for it), or kafka.FirstOffset or kafka.LastOffset before
// it resolved that.
func (r *Reader) Offset() int64 { return r.offset }

// Next returns the next message of the partition: a record, or a
// placeholder of skipped offsets (SkippedOf). At the end of what it can
// read it waits for more until ctx ends.
func (r *Reader) Next(ctx context.Context) (kafka.Message, error) {
	for len(r.queue) == 0 {
		if r.retries > 0 {
			if err := sleep(ctx, backoff(r.retries, r.opts.BackoffMin, r.opts.BackoffMax)); err != nil {
				return kafka.Message{}, err
			}
		}
		msgs, err := r.fetch(ctx)
		if err == nil {
			r.retries, r.failures = 0, 0
			r.queue = msgs
			continue
		}
		if ctx.Err() != nil {
			return kafka.Message{}, ctx.Err()
		}
		r.retries++
		if errors.Is(err, errPastEnd) {
			r.opts.logf("%s/%d: offset %d lies past the end of the partition; waiting for it", r.topic, r.partition, r.offset)
			continue
		}
		r.failures++
		err = fmt.Errorf("read %s/%d at offset %d: %w", r.topic, r.partition, r.offset, err)
		if r.failures >= r.opts.Attempts {
			return kafka.Message{}, err
		}
		r.opts.errorf("%v (attempt %d, retrying)", err, r.failures)
	}
	m := r.queue[0]
	r.queue[0] = kafka.Message{}
	r.queue = r.queue[1:]
	return m, nil
}

// errPastEnd: the offset to read lies past the partition's high watermark.
var errPastEnd = errors.New("offset past the end of the partition")

// fetch sends one fetch request and returns what it read: nothing when the
// partition has nothing past the offset within MaxWait.
func (r *Reader) fetch(ctx context.Context) ([]kafka.Message, error) {
	if r.offset < 0 {
		if err := r.resolve(ctx); err != nil {
			return nil, err
		}
	}
	resp, err := roundTrip(ctx, r.opts, []*Reader{r})
	if err != nil {
		return nil, err
	}
	return r.take(ctx, resp)
}

// roundTrip sends one read_committed fetch request for the readers'
// partitions, which must share a leader, at their offsets, and returns the
// answer.
func roundTrip(ctx context.Context, opts Options, readers []*Reader) (*fetchapi.Response, error) {
	var topics []fetchapi.RequestTopic
	for _, r := range readers {
		p := fetchapi.RequestPartition{Partition: int32(r.partition), CurrentLeaderEpoch: -1, FetchOffset: r.offset,
			LogStartOffset: -1, PartitionMaxBytes: int32(opts.MaxBytes)}
		if k := len(topics) - 1; k >= 0 && topics[k].Topic == r.topic {
			topics[k].Partitions = append(topics[k].Partitions, p)
		} else {
			topics = append(topics, fetchapi.RequestTopic{Topic: r.topic, Partitions: []fetchapi.RequestPartition{p}})
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.MaxWait+requestTimeout)
	defer cancel()
	res, err := opts.Transport.RoundTrip(ctx, opts.Addr, &fetchapi.Request{
		ReplicaID:      -1,
		MaxWaitTime:    int32(opts.MaxWait / time.Millisecond),
		MinBytes:       int32(opts.MinBytes),
		MaxBytes:       int32(opts.MaxBytes * len(readers)),
		IsolationLevel: readCommitted,
		SessionID:      0,  // no fetch session:
		SessionEpoch:   -1, // a full fetch every time
		Topics:         topics,
	})
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*fetchapi.Response)
	if !ok {
		return nil, fmt.Errorf("fetch: unexpected response %T", res)
	}
	if resp.ErrorCode != 0 {
		return nil, kafka.Error(resp.ErrorCode)
	}
	return resp, nil
}

// take returns what resp holds for the Reader's partition and moves its
// offset past it.
func (r *Reader) take(ctx context.Context, resp *fetchapi.Response) ([]kafka.Message, error) {
	p := r.find(resp)
	if p == nil {
		return nil, fmt.Errorf("fetch: the response lacks the partition")
	}
	if p.ErrorCode != 0 {
		err := kafka.Error(p.ErrorCode)
		if errors.Is(err, kafka.OffsetOutOfRange) {
			return nil, r.outOfRange(ctx)
		}
		return nil, err
	}
	msgs, next, err := decode(r.topic, r.partition, r.offset, p)
	if err != nil {
		return nil, err
	}
	r.offset = next
	return msgs, nil
}

// find returns the Reader's partition in resp, or nil.
func (r *Reader) find(resp *fetchapi.Response) *fetchapi.ResponsePartition {
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic != r.topic {
			continue
		}
		for j := range t.Partitions {
			if int(t.Partitions[j].Partition) == r.partition {
				return &t.Partitions[j]
			}
		}
	}
	return nil
}

// resolve turns kafka.FirstOffset or kafka.LastOffset into the partition's
// first offset or its last stable offset.
func (r *Reader) resolve(ctx context.Context) error {
	first, last, err := r.bounds(ctx, kafka.ReadCommitted)
	if err != nil {
		return err
	}
	if r.offset == kafka.LastOffset {
		r.offset = last
	} else {
		r.offset = first
	}
	r.opts.logf("%s/%d: starting at offset %d", r.topic, r.partition, r.offset)
	return nil
}

// outOfRange handles OFFSET_OUT_OF_RANGE as kafka-go's Reader does: below
// the first offset (retention deleted the records) it moves to the first
// offset; below the end (the leader had not caught up) it reads again; past
// the end it returns errPastEnd, to wait.
func (r *Reader) outOfRange(ctx context.Context) error {
	first, last, err := r.bounds(ctx, kafka.ReadUncommitted)
	if err != nil {
		return fmt.Errorf("offset %d out of range, and: %w", r.offset, err)
	}
	switch {
	case r.offset < first:
		r.opts.errorf("%s/%d: offset %d lies before the first offset %d: skipping to it (%d offsets)",
			r.topic, r.partition, r.offset, first, first-r.offset)
		r.offset = first
		return nil
	case r.offset < last:
		return nil
	default:
		return errPastEnd
	}
}

// bounds returns the partition's first offset and its end: the last stable
// offset for read_committed, the high watermark for read_uncommitted.
func (r *Reader) bounds(ctx context.Context, iso kafka.IsolationLevel) (first, end int64, err error) {
	res, err := r.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{IsolationLevel: iso, Topics: map[string][]kafka.OffsetRequest{
		r.topic: {kafka.FirstOffsetOf(r.partition), kafka.LastOffsetOf(r.partition)},
	}})
	if err != nil {
		return 0, 0, fmt.Errorf("list offsets of %s/%d: %w", r.topic, r.partition, err)
	}
	for _, p := range res.Topics[r.topic] {
		if p.Partition != r.partition {
			continue
		}
		if p.Error != nil {
			return 0, 0, fmt.Errorf("list offsets of %s/%d: %w", r.topic, r.partition, p.Error)
		}
		return p.FirstOffset, p.LastOffset, nil
	}
	return 0, 0, fmt.Errorf("list offsets of %s/%d: no answer for the partition", r.topic, r.partition)
}

// decode turns the answer p for the partition fetched at offset into the
// messages a read_committed reader gets, with a placeholder for each run of
// skipped offsets, and returns the offset to fetch next. Records before
// offset (a batch may begin before it) are left out.
func decode(topic string, partition int, offset int64, p *fetchapi.ResponsePartition) ([]kafka.Message, int64, error) {
	end := p.LastStableOffset
	if end < 0 {
		end = p.HighWatermark
	}
	d := decoder{topic: topic, partition: partition, end: end, next: offset, aborted: p.AbortedTransactions,
		abortedBy: map[int64]bool{}}
	var batches []protocol.RecordReader
	switch rs := p.RecordSet.Records.(type) {
	case nil:
	case *protocol.RecordStream:
		batches = rs.Records
	default:
		batches = []protocol.RecordReader{rs}
	}
	// The aborted transactions in order of their first offsets.
	sortAborted(d.aborted)
	for _, b := range batches {
		if err := d.batch(b); err != nil {
			return nil, offset, err
		}
	}
	d.flush()
	return d.out, d.next, nil
}

// decoder holds the state of decoding one fetch response (KIP-98's
// read_committed filter is per response).
type decoder struct {
	topic     string
	partition int
	end       int64 // last stable offset, for HighWaterMark
	next      int64 // the offset after the last message delivered or skipped

	aborted   []fetchapi.ResponseTransaction // not yet taken, by first offset
	abortedBy map[int64]bool                 // producers inside an aborted transaction

	hasRun            bool  // a run of skipped offsets waits to be delivered:
	runFirst, runLast int64 // its first and last offsets

	out []kafka.Message
}

// takeAbortedUpTo marks the producers whose aborted transactions begin at or
// before offset.
func (d *decoder) takeAbortedUpTo(offset int64) {
	for len(d.aborted) > 0 && d.aborted[0].FirstOffset <= offset {
		d.abortedBy[d.aborted[0].ProducerID] = true
		d.aborted = d.aborted[1:]
	}
}

// batch decodes one record batch.
func (d *decoder) batch(b protocol.RecordReader) error {
	switch b := b.(type) {
	case *protocol.ControlBatch:
		recs, err := readRecords(b)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return nil
		}
		d.takeAbortedUpTo(recs[len(recs)-1].offset)
		for _, rec := range recs {
			if rec.control == controlAbort && rec.isControl {
				delete(d.abortedBy, b.ProducerID)
			}
			d.skip(rec.offset)
		}
		return nil
	case *protocol.RecordBatch:
		recs, err := readRecords(b)
		if err != nil || len(recs) == 0 {
			return err
		}
		if b.ProducerID >= 0 && b.Attributes.Transactional() {
			d.takeAbortedUpTo(recs[len(recs)-1].offset)
			if d.abortedBy[b.ProducerID] {
				for _, rec := range recs {
					d.skip(rec.offset)
				}
				return nil
			}
		}
		d.deliver(recs)
		return nil
	default: // a message set of the old formats: no transactions
		recs, err := readRecords(b)
		if err != nil {
			return err
		}
		d.deliver(recs)
		return nil
	}
}

// skip adds offset to the run of skipped offsets.
func (d *decoder) skip(offset int64) {
	if offset < d.next {
		return
	}
	if !d.hasRun {
		d.runFirst, d.hasRun = offset, true
	}
	d.runLast = offset
	d.next = offset + 1
}

// flush delivers the placeholder of the run of skipped offsets, if any.
func (d *decoder) flush() {
	if !d.hasRun {
		return
	}
	d.out = append(d.out, Placeholder(d.topic, d.partition, d.runFirst, d.runLast, d.end))
	d.hasRun = false
}

// deliver adds the records at or after next as messages.
func (d *decoder) deliver(recs []record) {
	for _, rec := range recs {
		if rec.offset < d.next {
			continue
		}
		d.flush()
		d.out = append(d.out, kafka.Message{Topic: d.topic, Partition: d.partition, Offset: rec.offset, HighWaterMark: d.end,
			Key: rec.key, Value: rec.value, Headers: rec.headers, Time: rec.time})
		d.next = rec.offset + 1
	}
}

// record is one record read from a batch.
type record struct {
	offset    int64
	time      time.Time
	key       []byte
	value     []byte
	headers   []kafka.Header
	isControl bool  // a control record whose key could be read
	control   int16 // its type
}

// readRecords reads every record of a batch, copying keys and values out of
// the response's buffers. Control records get their type.
func readRecords(rr protocol.RecordReader) ([]record, error) {
	_, isControl := rr.(*protocol.ControlBatch)
	var out []record
	for {
		r, err := rr.ReadRecord()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("read record batch: %w", err)
		}
		rec := record{offset: r.Offset, time: r.Time}
		if isControl {
			cr, err := protocol.ReadControlRecord(r) // closes the key and value
			if err == nil {
				rec.isControl, rec.control = true, cr.Type
			}
			out = append(out, rec)
			continue
		}
		rec.key, err = readBytes(r.Key)
		if err == nil {
			rec.value, err = readBytes(r.Value)
		}
		if err != nil {
			return out, fmt.Errorf("read record at offset %d: %w", r.Offset, err)
		}
		if len(r.Headers) > 0 {
			rec.headers = append([]kafka.Header(nil), r.Headers...)
		}
		out = append(out, rec)
	}
}

// readBytes reads and closes b (nil stays nil).
func readBytes(b protocol.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	defer b.Close()
	return protocol.ReadAll(b)
}

// sortAborted sorts the aborted transactions by first offset (insertion
// sort: a response lists a few, usually in order already).
func sortAborted(a []fetchapi.ResponseTransaction) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].FirstOffset < a[j-1].FirstOffset; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// backoff is the wait before the attempt after n failures: min doubled
// n-1 times, at most max.
func backoff(n int, min, max time.Duration) time.Duration {
	d := min
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

// sleep waits d or until ctx ends (then its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
