package consumer

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"projector/internal/coord"
	"projector/internal/offsets"
	"projector/internal/records"
)

// run processes the batches one after the other and waits for their commits.
func (r *rig) run(ctx context.Context, batches ...[]kafka.Message) error {
	cm := r.c.startCommitter(ctx, r.commits)
	for _, b := range batches {
		if err := r.c.process(ctx, b, cm); err != nil {
			_ = cm.close()
			return err
		}
	}
	return cm.close()
}

// wantCount checks that the counter or gauge c, named what in the error, is want.
func wantCount(t *testing.T, c prometheus.Collector, want float64, what string) {
	t.Helper()
	if got := testutil.ToFloat64(c); got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func tp(topic string, partition int) offsets.TopicPartition {
	return offsets.TopicPartition{Topic: topic, Partition: partition}
}

func wantOffsets(t *testing.T, r *rig, want map[offsets.TopicPartition]int64) {
	t.Helper()
	if got := r.commits.offsets(); !maps.Equal(got, want) {
		t.Errorf("committed %v, want %v", got, want)
	}
}

func TestRedeliveredBatchAppliesAndDeadLettersOnce(t *testing.T) {
	r := newRig(t)
	batch := []kafka.Message{event(t, "views", 0, 0, "e1"), poison("views", 0, 1), event(t, "views", 0, 2, "e2"),
		event(t, "orders", 1, 7, "e3")}
	if err := r.run(t.Context(), batch, batch); err != nil {
		t.Fatal(err)
	}
	if n := r.applier.effects(); n != 3 {
		t.Errorf("records applied %d times, want 3 (each once)", n)
	}
	if got := r.dlq.origins(); !slices.Equal(got, []string{"views:0:1"}) {
		t.Errorf("dead letters %v, want views:0:1 once", got)
	}
	if n := r.lookups.Load(); n != 1 {
		t.Errorf("dead-letter topic read %d times, want 1 (at the first poison; the marks say the redelivered record is done)", n)
	}
	wantCount(t, r.m.DeadLettered.WithLabelValues("views"), 1, "dead-lettered metric")
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 3, tp("orders", 1): 8})
	wantCount(t, r.m.Commits, 2, "commits (the first batch at once, the second when closing)")
}

// TestDeadLettersSurviveRedisGoingBack: poison records whose marks Redis
// lost are not dead-lettered again, whether the same group generation
// delivers them again (the consumer's view holds its own writes) or a later
// one does (it reads the dead-letter topic again); new poison still is.
func TestDeadLettersSurviveRedisGoingBack(t *testing.T) {
	r := newRig(t)
	batch := []kafka.Message{event(t, "views", 0, 0, "e1"), poison("views", 0, 1)}
	for gen := range int64(3) {
		r.c.reader = generationReader{gen: gen / 2} // generations 0, 0, 1
		r.redis.FlushAll()                          // Redis went back in time before the batch
		if err := r.run(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		if n, want := r.lookups.Load(), int32(gen/2+1); n != want {
			t.Errorf("delivery %d: dead-letter topic read %d times, want %d (once per generation)", gen, n, want)
		}
	}
	// another member dead-letters views:0:2 in generation 2, and this one
	// gets the partition back in generation 3 with the marks lost
	_, bad, _ := records.Split([]kafka.Message{poison("views", 0, 2)}, 1<<20)
	if err := r.dlq.WriteMessages(t.Context(), records.DeadLetter(bad[0])); err != nil {
		t.Fatal(err)
	}
	r.c.reader = generationReader{gen: 3}
	r.redis.FlushAll()
	if err := r.run(t.Context(), []kafka.Message{poison("views", 0, 2), poison("views", 0, 3)}); err != nil {
		t.Fatal(err)
	}
	if err := r.run(t.Context(), []kafka.Message{poison("views", 0, 4)}); err != nil {
		t.Fatal(err)
	}
	if got := r.dlq.origins(); !slices.Equal(got, []string{"views:0:1", "views:0:2", "views:0:3", "views:0:4"}) {
		t.Errorf("dead letters %v, want views:0:1 to views:0:4 once each", got)
	}
	if n := r.lookups.Load(); n != 3 {
		t.Errorf("dead-letter topic read %d times, want 3 (new poison of a generation read already needs no read)", n)
	}
}

// TestRedeliveredPoisonGatheredOnce: a partition delivered again within one
// commit period (a rebalance gave it back from its committed offset) hands
// its poison records to the committer twice; they are dead-lettered once.
func TestRedeliveredPoisonGatheredOnce(t *testing.T) {
	r, cm := gathering(t, []kafka.Message{event(t, "views", 0, 0, "e0")},
		[]kafka.Message{event(t, "views", 0, 1, "e1"), poison("views", 0, 2)},
		[]kafka.Message{event(t, "views", 0, 1, "e1"), poison("views", 0, 2), poison("views", 0, 3)})
	if err := cm.close(); err != nil {
		t.Fatal(err)
	}
	if got := r.dlq.origins(); !slices.Equal(got, []string{"views:0:2", "views:0:3"}) {
		t.Errorf("dead letters %v, want views:0:2 and views:0:3 once each", got)
	}
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 4})
}

func TestCommitsGatherTheBatchesAppliedMeanwhile(t *testing.T) {
	r := newRig(t)
	r.c.opts.CommitEvery = time.Hour // only the first batch and close commit
	batches := [][]kafka.Message{
		{event(t, "views", 0, 0, "e0")},
		{event(t, "views", 0, 1, "e1"), event(t, "orders", 1, 4, "e2")},
		{event(t, "views", 0, 2, "e3"), poison("views", 0, 3)},
		{event(t, "orders", 1, 5, "e4"), poison("orders", 1, 6)},
	}
	if err := r.run(t.Context(), batches...); err != nil {
		t.Fatal(err)
	}
	wantCount(t, r.m.Commits, 2, "commits (the first batch, then the three applied meanwhile, poison or not, together when closing)")
	if n := r.dlq.count(); n != 1 {
		t.Errorf("%d dead-letter writes, want 1 (the poison of the gathered batches together)", n)
	}
	if got := r.dlq.origins(); !slices.Equal(got, []string{"views:0:3", "orders:1:6"}) {
		t.Errorf("dead letters %v, want views:0:3 and orders:1:6 in batch order", got)
	}
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 4, tp("orders", 1): 7})
	if n := r.applier.effects(); n != 5 {
		t.Errorf("records applied %d times, want 5", n)
	}
}

// gathering returns a rig whose committer commits only the first batch,
// batches with poison and what close finds (CommitEvery an hour), with the
// batches processed through it; it returns once the first batch's commit
// is done, so that what a test changes afterwards concerns the others.
func gathering(t *testing.T, batches ...[]kafka.Message) (*rig, *committer) {
	t.Helper()
	r := newRig(t)
	r.c.opts.CommitEvery = time.Hour
	cm := r.c.startCommitter(t.Context(), r.commits)
	for i, b := range batches {
		if err := r.c.process(t.Context(), b, cm); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			waitCommits(t, r, 1)
		}
	}
	return r, cm
}

// waitCommits waits until r's committer has committed n times (the
// commits metric, counted once a commit is done).
func waitCommits(t *testing.T, r *rig, n float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(r.m.Commits) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%v commits after 5s, want %v", testutil.ToFloat64(r.m.Commits), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCommitsOnlyWhatRedisHolds: a partition whose watermark lies below
// its applied records (Redis went back in time) keeps its offset waiting
// while the others are committed; once the watermark reaches the records
// again (a repair), they are committed too.
func TestCommitsOnlyWhatRedisHolds(t *testing.T) {
	r := newRig(t)
	r.c.opts.CommitEvery = 5 * time.Millisecond
	cm := r.c.startCommitter(t.Context(), r.commits)
	defer func() { _ = cm.close() }()
	process := func(msgs ...kafka.Message) {
		t.Helper()
		if err := r.c.process(t.Context(), msgs, cm); err != nil {
			t.Fatal(err)
		}
	}
	process(event(t, "views", 0, 0, "e0"))
	waitOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 1})
	r.applier.lose("views:0") // Redis loses the next batch's view
	process(event(t, "views", 0, 1, "e1"), event(t, "orders", 1, 4, "e2"))
	process(event(t, "orders", 1, 5, "e3"), poison("orders", 1, 6))
	waitOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 1, tp("orders", 1): 7})
	time.Sleep(20 * time.Millisecond) // a few more commits of the waiting offset are tried
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 1, tp("orders", 1): 7})
	r.applier.setWatermark("views:0", 1) // applied again
	waitOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 2, tp("orders", 1): 7})
}

// waitOffsets waits until the committed offsets are want.
func waitOffsets(t *testing.T, r *rig, want map[offsets.TopicPartition]int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !maps.Equal(r.commits.offsets(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("committed %v after 5s, want %v", r.commits.offsets(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReplayMakesTheConsumerReadAgain: Redis refused a batch because it
// lost its data or went back in time beyond repair; once a replay rebuilt it
// up to the committed offsets, the consumer reads again from them (errReread)
// instead of applying the batch it held, and the batches it had applied but
// not committed (beyond the rebuilt watermarks) stay uncommitted.
func TestReplayMakesTheConsumerReadAgain(t *testing.T) {
	for _, status := range []string{"", coord.StatusRolledBack, coord.StatusRebuilding} {
		r, cm := gathering(t, []kafka.Message{event(t, "views", 0, 0, "e0")}, []kafka.Message{event(t, "views", 0, 1, "e1")})
		r.applier.notReady = []string{status} // the meta says ready again at once (the fake's status)
		r.applier.setWatermark("views:0", 0)  // the replay rebuilt up to the committed offset
		err := r.c.process(t.Context(), []kafka.Message{event(t, "views", 0, 2, "e2")}, cm)
		if !errors.Is(err, errReread) {
			t.Fatalf("status %q: process = %v, want errReread", status, err)
		}
		if err := cm.close(); err != nil {
			t.Fatal(err)
		}
		wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 1}) // the first batch only
	}
	// a handover's pause: the held batch is applied after it
	r := newRig(t)
	r.applier.notReady = []string{coord.StatusPaused}
	if err := r.run(t.Context(), []kafka.Message{event(t, "views", 0, 0, "e0")}); err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 1})
}

// TestIdleConsumerReadsAgainAfterReplay: a consumer without a batch in
// flight that was held (Redis lost its data) ends its session once ready
// again, so that it reads from the committed offsets; a handover's pause
// does not.
func TestIdleConsumerReadsAgainAfterReplay(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	cm := r.c.startCommitter(ctx, r.commits)
	defer func() { _ = cm.close() }()
	consume := func() error {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		return r.c.consume(cctx, nil, make(chan struct{}), nil, nil, cm)
	}
	r.c.report(coord.StatusPaused)
	r.c.report(coord.StatusReady)
	if err := consume(); err != nil {
		t.Fatalf("after a pause: consume = %v, want nil (the session goes on until it ends)", err)
	}
	r.c.report("")
	r.c.report(coord.StatusReady)
	if err := consume(); !errors.Is(err, errReread) {
		t.Fatalf("after a replay: consume = %v, want errReread", err)
	}
}

// TestNotReadyCommitsNothing: batches gathered while the projections
// stopped being ready are not committed (a replay may have read the
// committed offsets already).
func TestNotReadyCommitsNothing(t *testing.T) {
	r, cm := gathering(t, []kafka.Message{event(t, "views", 0, 0, "e0")}, []kafka.Message{event(t, "views", 0, 1, "e1")})
	r.meta.setStatus(coord.StatusRolledBack)
	if err := cm.close(); err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 1}) // the first batch, committed at once
}

func TestRebalanceRedeliveryInsideOneBatch(t *testing.T) {
	r := newRig(t)
	// After a rebalance the partition comes again from its committed offset 1
	// while its first delivery is still being gathered.
	batch := []kafka.Message{event(t, "views", 0, 0, "e0"), event(t, "views", 0, 1, "e1"), poison("views", 0, 2),
		event(t, "views", 0, 1, "e1"), poison("views", 0, 2), event(t, "views", 0, 3, "e3")}
	if err := r.run(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	if len(r.applier.batches) != 1 {
		t.Fatalf("applier called %d times, want 1", len(r.applier.batches))
	}
	var offs []int64
	for _, rec := range r.applier.batches[0] {
		offs = append(offs, rec.Offset)
	}
	if !slices.Equal(offs, []int64{0, 1, 3}) {
		t.Errorf("applied offsets %v, want 0 1 3 (repeats dropped)", offs)
	}
	if got := r.dlq.origins(); !slices.Equal(got, []string{"views:0:2"}) {
		t.Errorf("dead letters %v, want views:0:2 once", got)
	}
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 4})
}

func TestCommitRetriedUntilItSucceeds(t *testing.T) {
	r := newRig(t)
	r.commits.set(2)
	if err := r.run(t.Context(), []kafka.Message{event(t, "views", 0, 5, "e1")}); err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 6})
	wantCount(t, r.m.KafkaCommitErrors, 2, "kafka commit errors")
	wantCount(t, r.m.RedisRetries, 0, "redis retries (a failed commit is not a Redis failure)")
	if ok, why := r.h.Ready(); !ok {
		t.Errorf("not ready after the commit recovered: %s", why)
	}
}

func TestFailedCommitStopsLaterCommits(t *testing.T) {
	r := newRig(t)
	r.commits.stuck = map[int64]bool{5: true}
	ctx, cancel := context.WithCancel(t.Context())
	cm := r.c.startCommitter(ctx, r.commits)
	if err := r.c.process(ctx, []kafka.Message{event(t, "views", 0, 5, "e1")}, cm); err != nil {
		t.Fatal(err)
	}
	for r.commits.count() < 2 {
		time.Sleep(time.Millisecond) // wait until the commit was retried
	}
	// The next batch waits behind the failing commit (its own would succeed);
	// shutting down gives up on the first and so commits neither.
	if err := r.c.process(ctx, []kafka.Message{event(t, "views", 0, 6, "e2")}, cm); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := cm.close()
	if err == nil || !strings.Contains(err.Error(), "commit") {
		t.Fatalf("close = %v, want the commit failure", err)
	}
	if err := cm.add([]kafka.Message{event(t, "views", 0, 7, "e3")}, nil); err == nil {
		t.Error("a batch was accepted for commit after a commit failed for good")
	}
	wantOffsets(t, r, map[offsets.TopicPartition]int64{})
	if slices.Contains(r.j.list(), "commit") {
		t.Errorf("something was committed after the failure: %v", r.j.list())
	}
}

func TestDeadLetterFailureHoldsTheCommit(t *testing.T) {
	r := newRig(t)
	r.dlq.set(2)
	batch := []kafka.Message{event(t, "views", 0, 0, "e1"), poison("views", 0, 1)}
	if err := r.run(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	if got := r.dlq.origins(); !slices.Equal(got, []string{"views:0:1"}) {
		t.Errorf("dead letters %v, want views:0:1 once", got)
	}
	j := r.j.list()
	if strings.Count(strings.Join(j, ","), "dead-letter failed") != 2 {
		t.Errorf("journal %v, want two failed dead-letter writes", j)
	}
	if i, k := slices.Index(j, "dead-letter"), slices.Index(j, "commit"); i < 0 || k < i {
		t.Errorf("journal %v: the commit does not follow the dead-letter write", j)
	}
	wantCount(t, r.m.DeadLetterErrors, 2, "dead-letter errors")
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 2})
}

func TestDeadLetterWithLostAckIsNotWrittenTwice(t *testing.T) {
	r := newRig(t)
	r.dlq.set(1)
	r.dlq.lostAck = true
	if err := r.run(t.Context(), []kafka.Message{poison("views", 2, 4), poison("views", 2, 5)}); err != nil {
		t.Fatal(err)
	}
	if got := r.dlq.origins(); !slices.Equal(got, []string{"views:2:4", "views:2:5"}) {
		t.Errorf("dead letters %v, want views:2:4 and views:2:5 once each", got)
	}
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 2): 6})
}

func TestRedisFailureMidBatchCommitsOnce(t *testing.T) {
	r := newRig(t)
	r.applier.set(1)
	if err := r.run(t.Context(), []kafka.Message{event(t, "views", 0, 0, "e1"), event(t, "views", 0, 1, "e2")}); err != nil {
		t.Fatal(err)
	}
	if j := r.j.list(); !slices.Equal(j, []string{"apply failed", "apply", "commit"}) {
		t.Errorf("journal %v, want a failed apply, the apply, one commit", j)
	}
	if n := r.applier.effects(); n != 2 {
		t.Errorf("records applied %d times, want 2", n)
	}
	wantCount(t, r.m.RedisErrors.WithLabelValues("apply"), 1, "redis errors of apply")
	wantCount(t, r.m.KafkaCommitErrors, 0, "kafka commit errors")
	wantOffsets(t, r, map[offsets.TopicPartition]int64{tp("views", 0): 2})
}

func TestMetaMissingWithCommitsIsDataLoss(t *testing.T) {
	r := newRig(t)
	r.meta.setStatus("")
	r.committed[tp("views", 0)] = 10
	status, err := r.c.checkMeta(t.Context())
	if err != nil || status != "" {
		t.Fatalf("checkMeta = %q, %v; want missing", status, err)
	}
	if r.meta.created != 0 {
		t.Error("the meta hash was created over lost data")
	}
	wantCount(t, r.m.RedisDataLost, 1, "data-lost gauge")
	if ok, why := r.h.Ready(); ok || !strings.Contains(why, "lost its data") {
		t.Errorf("ready %v (%q), want not ready naming the data loss", ok, why)
	}
	r.meta.setStatus("ready") // a replayer rebuilt the projections
	if err := r.c.waitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantCount(t, r.m.RedisDataLost, 0, "data-lost gauge after the rebuild")
	if ok, why := r.h.Ready(); !ok {
		t.Errorf("not ready after the rebuild: %s", why)
	}
}

// An idle consumer that saw the data loss between batches is ready again
// once a replayer rebuilt the projections, without waiting for a batch.
func TestIdleConsumerReadyAfterReplay(t *testing.T) {
	r := newRig(t)
	r.committed[tp("views", 0)] = 10
	for _, lost := range []string{"", "rebuilding", "rolled_back"} {
		r.meta.setStatus(lost)
		if _, err := r.c.checkMeta(t.Context()); err != nil {
			t.Fatal(err)
		}
		if ok, _ := r.h.Ready(); ok {
			t.Errorf("status %q: ready, want not ready", lost)
		}
		r.meta.setStatus("ready") // the replayer finished
		if _, err := r.c.checkMeta(t.Context()); err != nil {
			t.Fatal(err)
		}
		if ok, why := r.h.Ready(); !ok {
			t.Errorf("after status %q and a replay: not ready (%s)", lost, why)
		}
	}
}

func TestFirstStartCreatesMeta(t *testing.T) {
	r := newRig(t)
	r.meta.setStatus("")
	status, err := r.c.checkMeta(t.Context())
	if err != nil || status != "ready" {
		t.Fatalf("checkMeta = %q, %v; want ready", status, err)
	}
	if r.meta.created != 1 {
		t.Errorf("meta hash created %d times, want once", r.meta.created)
	}
	wantCount(t, r.m.RedisDataLost, 0, "data-lost gauge")
}
