package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// GroupConfig configures a Group.
type GroupConfig struct {
	Brokers []string
	// Dialer opens the connections to the group coordinator.
	Dialer  *kafka.Dialer
	GroupID string
	Topics  []string
	// Fetch configures the partition Readers. The Group owns its Transport:
	// Close closes its connections (CloseIdleConnections).
	Fetch Options
	// QueueCapacity is how many messages the Readers may hold that
	// FetchMessage has not returned yet (default 1000).
	QueueCapacity int
	// HeartbeatInterval, SessionTimeout and RebalanceTimeout are the
	// group membership's (kafka-go's defaults when zero: 3 s, 30 s, 30 s).
	HeartbeatInterval, SessionTimeout, RebalanceTimeout time.Duration
	// Logger and ErrorLogger, when set, log the membership's and the
	// Readers' steps and failures.
	Logger, ErrorLogger kafka.Logger
}

// Group is a member of a consumer group that reads its partitions with
// read_committed Readers. It gives what kafka-go's Reader gives a group
// member, with explicit synchronous commits: kafka-go's ConsumerGroup joins
// the group, heartbeats, and ends a generation on a rebalance (the
// partitions are revoked: their Readers stop, and the messages they read
// that FetchMessage has not returned yet are dropped); each generation's
// partitions are read from the group's committed offsets, from the first
// offset where the group committed none. CommitMessages commits through
// the current generation. FetchMessage, CommitMessages and Close are safe
// for concurrent use.
type Group struct {
	cfg     GroupConfig
	cg      *kafka.ConsumerGroup
	failed  error // the configuration was refused
	msgs    chan delivery
	errs    chan error
	commits chan commitRequest
	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	done    chan struct{} // closed when run has returned
	once    sync.Once

	mu         sync.Mutex
	generation int64 // counts the generations joined
}

// delivery is a message or error of a generation's Reader.
type delivery struct {
	generation int64
	msg        kafka.Message
	err        error
}

// commitRequest carries the offsets to commit (topic -> partition -> next
// offset to read) and where to answer.
type commitRequest struct {
	offsets map[string]map[int]int64
	errc    chan error
}

// joinAttempts is how many times in a row joining the group may fail before
// FetchMessage returns the error (and again after as many more).
const joinAttempts = 3

// commitAttempts is how many times a commit is tried before CommitMessages
// returns the error.
const commitAttempts = 3

// NewGroup joins the group in the background; FetchMessage returns what
// the assigned partitions hold. A configuration kafka-go refuses makes
// FetchMessage return that error.
func NewGroup(cfg GroupConfig) *Group {
	if cfg.QueueCapacity <= 0 {
		cfg.QueueCapacity = 1000
	}
	if cfg.Fetch.Logger == nil {
		cfg.Fetch.Logger = cfg.Logger
	}
	if cfg.Fetch.ErrorLogger == nil {
		cfg.Fetch.ErrorLogger = cfg.ErrorLogger
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Group{cfg: cfg, msgs: make(chan delivery, cfg.QueueCapacity), errs: make(chan error, 1),
		commits: make(chan commitRequest), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                cfg.GroupID,
		Brokers:           cfg.Brokers,
		Dialer:            cfg.Dialer,
		Topics:            cfg.Topics,
		HeartbeatInterval: cfg.HeartbeatInterval,
		SessionTimeout:    cfg.SessionTimeout,
		RebalanceTimeout:  cfg.RebalanceTimeout,
		StartOffset:       kafka.FirstOffset,
		Logger:            cfg.Logger,
		ErrorLogger:       cfg.ErrorLogger,
	})
	if err != nil {
		g.failed = fmt.Errorf("consumer group %s: %w", cfg.GroupID, err)
		close(g.done)
		return g
	}
	g.cg = cg
	go g.run()
	return g
}

// run takes generation after generation until Close.
func (g *Group) run() {
	defer close(g.done)
	failures := 0
	for {
		gen, err := g.cg.Next(g.ctx)
		if err != nil {
			if g.ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				return
			}
			failures++
			g.cfg.Fetch.errorf("consumer group %s: joining failed: %v", g.cfg.GroupID, err)
			if failures%joinAttempts == 0 {
				select {
				case g.errs <- fmt.Errorf("join consumer group %s: %w", g.cfg.GroupID, err):
				default:
				}
			}
			continue
		}
		failures = 0
		g.mu.Lock()
		g.generation++
		n := g.generation
		g.mu.Unlock()
		g.cfg.Fetch.logf("consumer group %s: generation %d, member %s, assigned %v", g.cfg.GroupID, gen.ID, gen.MemberID, gen.Assignments)
		var readers []*Reader
		for topic, parts := range gen.Assignments {
			for _, a := range parts {
				readers = append(readers, NewReader(g.cfg.Fetch, topic, a.ID, a.Offset))
			}
		}
		if len(readers) > 0 {
			gen.Start(func(ctx context.Context) { g.readAll(ctx, readers, n) })
		}
		gen.Start(func(ctx context.Context) { g.commitLoop(ctx, gen) })
	}
}

// Generation returns the number of the generation joined last (0 before the first).
func (g *Group) Generation() int64 { return g.current() }

// current returns the number of the generation joined last.
func (g *Group) current() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.generation
}

// FetchMessage returns the next message of the member's partitions: a
// record, or a placeholder of skipped offsets (SkippedOf). Messages of
// partitions revoked since are dropped.
func (g *Group) FetchMessage(ctx context.Context) (kafka.Message, error) {
	if g.failed != nil {
		return kafka.Message{}, g.failed
	}
	for {
		select {
		case <-ctx.Done():
			return kafka.Message{}, ctx.Err()
		case <-g.ctx.Done():
			return kafka.Message{}, io.EOF
		case err := <-g.errs:
			return kafka.Message{}, err
		case d := <-g.msgs:
			if d.generation < g.current() {
				continue
			}
			return d.msg, d.err
		}
	}
}

// CommitMessages commits, for each partition of msgs, the offset after its
// highest message (records and placeholders alike) through the current
// generation, waiting for one when none is running.
func (g *Group) CommitMessages(ctx context.Context, msgs ...kafka.Message) error {
	if g.failed != nil {
		return g.failed
	}
	if len(msgs) == 0 {
		return nil
	}
	offsets := map[string]map[int]int64{}
	for _, m := range msgs {
		ps := offsets[m.Topic]
		if ps == nil {
			ps = map[int]int64{}
			offsets[m.Topic] = ps
		}
		if o, ok := ps[m.Partition]; !ok || m.Offset+1 > o {
			ps[m.Partition] = m.Offset + 1
		}
	}
	req := commitRequest{offsets: offsets, errc: make(chan error, 1)}
	select {
	case g.commits <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.ctx.Done():
		return io.ErrClosedPipe
	}
	select {
	case err := <-req.errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// commitLoop commits the requests through gen until ctx (the generation)
// ends; the requests waiting then are tried with gen once more.
func (g *Group) commitLoop(ctx context.Context, gen *kafka.Generation) {
	for {
		select {
		case req := <-g.commits:
			req.errc <- g.commit(gen, req.offsets)
		case <-ctx.Done():
			for {
				select {
				case req := <-g.commits:
					req.errc <- g.commit(gen, req.offsets)
				default:
					return
				}
			}
		}
	}
}

// commit commits offsets through gen, trying commitAttempts times with
// backoff.
func (g *Group) commit(gen *kafka.Generation, offsets map[string]map[int]int64) error {
	var err error
	for attempt := 1; attempt <= commitAttempts; attempt++ {
		if attempt > 1 {
			if sleep(g.ctx, backoff(attempt-1, 100*time.Millisecond, 5*time.Second)) != nil {
				return err
			}
		}
		if err = gen.CommitOffsets(offsets); err == nil {
			return nil
		}
	}
	return fmt.Errorf("commit offsets of group %s: %w", g.cfg.GroupID, err)
}

// Close leaves the group, stops the Readers and closes the Transport's
// connections.
func (g *Group) Close() error {
	g.once.Do(func() {
		g.cancel()
		if g.cg != nil {
			_ = g.cg.Close()
		}
		<-g.done
		if c, ok := g.cfg.Fetch.Transport.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	})
	return nil
}

// readAll reads the readers' partitions until ctx (the generation) ends:
// one fetch request at a time per leader broker for all the partitions it
// leads, answered as soon as one of them has records (MinBytes) and, while
// records flow, sent Options.Pace after the one before, where one Reader
// each would send a request per partition. When a request fails, or
// a partition's answer does, the leaders are looked up again; failures
// count on across these regroupings, so that the backoff grows and
// FetchMessage hears of them as a Reader's Next would.
func (g *Group) readAll(ctx context.Context, readers []*Reader, generation int64) {
	slices.SortFunc(readers, func(a, b *Reader) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	opts := g.cfg.Fetch.withDefaults()
	client := &kafka.Client{Addr: opts.Addr, Transport: opts.Transport, Timeout: requestTimeout}
	var failures atomic.Int64 // failed requests in a row
	for ctx.Err() == nil {
		byLeader, err := leaders(ctx, client, readers)
		if err != nil {
			n := failures.Add(1)
			g.readFailed(ctx, generation, opts, n, err)
			if sleep(ctx, backoff(int(n), opts.BackoffMin, opts.BackoffMax)) != nil {
				return
			}
			continue
		}
		// A regroup ends every leader's loop between requests; the messages
		// a loop has read are still delivered (its readers' offsets moved
		// past them), only the generation's end drops them.
		lctx, regroup := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, rs := range byLeader {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g.readLeader(ctx, lctx, opts, rs, generation, regroup, &failures)
			}()
		}
		wg.Wait()
		regroup()
	}
}

// leaders groups the readers by the broker leading their partition.
func leaders(ctx context.Context, client *kafka.Client, readers []*Reader) ([][]*Reader, error) {
	var topics []string
	for _, r := range readers {
		if !slices.Contains(topics, r.topic) {
			topics = append(topics, r.topic)
		}
	}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("look up the partition leaders: %w", err)
	}
	leader := map[string]map[int]int{}
	for _, t := range md.Topics {
		leader[t.Name] = map[int]int{}
		for _, p := range t.Partitions {
			if p.Error == nil {
				leader[t.Name][p.ID] = p.Leader.ID
			}
		}
	}
	at := map[int]int{}
	var out [][]*Reader
	for _, r := range readers {
		id, ok := leader[r.topic][r.partition]
		if !ok {
			return nil, fmt.Errorf("look up the partition leaders: no leader of %s/%d", r.topic, r.partition)
		}
		j, ok := at[id]
		if !ok {
			j = len(out)
			at[id] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], r)
	}
	return out, nil
}

// readLeader reads the readers' partitions, which share a leader, with one
// request at a time until lctx ends, and calls regroup (and returns) when
// the request or a partition fails: the leaders may have moved. Messages
// read are delivered until the generation (ctx) ends. A partition whose
// offset lies past its end waits, out of the requests, as a Reader does. A
// request that follows an answer with records waits for Options.Pace.
func (g *Group) readLeader(ctx, lctx context.Context, opts Options, readers []*Reader, generation int64, regroup func(), failures *atomic.Int64) {
	waitUntil := make([]time.Time, len(readers))
	fail := func(err error) time.Duration {
		n := failures.Add(1)
		g.readFailed(ctx, generation, opts, n, err)
		return backoff(int(n), opts.BackoffMin, opts.BackoffMax)
	}
	var sent time.Time // when the last request was sent
	paced := false     // its answer had records
	for lctx.Err() == nil {
		if paced && sleep(lctx, opts.Pace-time.Since(sent)) != nil {
			return
		}
		paced = false
		now := time.Now()
		var ready []*Reader
		var readyAt []int
		next := time.Time{}
		for i, r := range readers {
			if now.Before(waitUntil[i]) {
				if next.IsZero() || waitUntil[i].Before(next) {
					next = waitUntil[i]
				}
				continue
			}
			if r.offset < 0 {
				if err := r.resolve(lctx); err != nil {
					if lctx.Err() != nil {
						return
					}
					waitUntil[i] = now.Add(fail(err))
					continue
				}
			}
			ready, readyAt = append(ready, r), append(readyAt, i)
		}
		if len(ready) == 0 {
			if sleep(lctx, time.Until(next)) != nil {
				return
			}
			continue
		}
		sent = time.Now()
		resp, err := roundTrip(lctx, opts, ready)
		if err != nil {
			if lctx.Err() != nil {
				return // nothing was read: the offsets stay
			}
			if sleep(lctx, fail(fmt.Errorf("fetch %d partitions: %w", len(ready), err))) == nil {
				regroup()
			}
			return
		}
		var wait time.Duration // > 0: a partition failed, regroup after it
		for k, r := range ready {
			msgs, err := r.take(ctx, resp)
			paced = paced || len(msgs) > 0
			switch {
			case errors.Is(err, errPastEnd):
				opts.logf("%s/%d: offset %d lies past the end of the partition; waiting for it", r.topic, r.partition, r.offset)
				waitUntil[readyAt[k]] = time.Now().Add(opts.BackoffMax)
			case err != nil:
				wait = fail(fmt.Errorf("read %s/%d at offset %d: %w", r.topic, r.partition, r.offset, err))
			}
			for _, m := range msgs {
				select {
				case g.msgs <- delivery{generation: generation, msg: m}:
				case <-ctx.Done():
					return
				}
			}
		}
		if wait > 0 {
			if sleep(lctx, wait) == nil {
				regroup()
			}
			return
		}
		failures.Store(0)
	}
}

// readFailed logs a failure of the generation's reading, and passes it on to
// FetchMessage once Attempts of them came in a row (and again after as
// many more), as Reader.Next does.
func (g *Group) readFailed(ctx context.Context, generation int64, opts Options, failures int64, err error) {
	if failures%int64(opts.Attempts) != 0 {
		opts.errorf("%v (attempt %d, retrying)", err, failures)
		return
	}
	select {
	case g.msgs <- delivery{generation: generation, err: err}:
	case <-ctx.Done():
	}
}
