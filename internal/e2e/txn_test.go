package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"projector/internal/gen"
	"projector/internal/offsets"
	"projector/internal/testing/testkafka"
	"projector/internal/testing/testredis"
)

// TestTransactionsApacheKafka: producers write the log through Kafka
// transactions on a real Apache Kafka broker: committed transactions of
// generated events, records written outside transactions, and, in the same
// partitions and between them (also interleaved with a committed
// transaction), aborted transactions of other events and of poison records;
// one transaction is left open for a few seconds while later transactions
// commit. The consumer reads committed records only: it waits at the open
// transaction's first offsets (its committed offsets stay there), goes on
// once the transaction commits, and in the end every key equals the model of
// the committed records, the dead-letter topic holds the committed poison
// records only, and the lag is 0 (committed offsets at the end of every
// partition, past the final commit and abort markers; projector_consumer_lag
// 0). Then Redis loses everything (FLUSHALL) and the replayer rebuilds the
// same state from the same log. On Redis standalone and on a 3-master
// Redis Cluster, sharing one broker.
func TestTransactionsApacheKafka(t *testing.T) {
	broker := testkafka.Start(t)
	t.Run("standalone", func(t *testing.T) {
		srv := testredis.StartStandalone(t)
		runTransactions(t, broker, "std", srv.Client(), []string{srv.Addr()}, "standalone", func(ctx context.Context) error {
			return srv.Client().FlushAll(ctx).Err()
		})
	})
	t.Run("cluster", func(t *testing.T) {
		c := testredis.StartCluster(t, 3)
		runTransactions(t, broker, "cl", c.Client(), c.Addrs(), "cluster", c.FlushAll)
	})
}

// txnPartitions is the partition count of each input topic.
const txnPartitions = 3

func runTransactions(t *testing.T, broker *testkafka.Broker, name string, rdb redis.UniversalClient, addrs []string, mode string,
	flushAll func(context.Context) error) {
	ctx := context.Background()
	topics := []string{name + ".views", name + ".clicks", name + ".orders"}
	dlq, group := name+".dlq", name+"-projector"
	for _, topic := range topics {
		broker.CreateTopic(t, topic, txnPartitions)
	}
	broker.CreateTopic(t, dlq, 1)
	brokers := broker.Addrs()

	// The log (committed), and other events and poison records for the
	// aborted transactions (ids of another seed: were one applied, a key
	// would differ from the model).
	seed := testSeed(t)
	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = seed
	gc.Start, gc.Span = start.Add(-36*time.Hour), 36*time.Hour
	gc.ViewsTopic, gc.ClicksTopic, gc.OrdersTopic = topics[0], topics[1], topics[2]
	log := gen.New(gc).Log(envInt("E2E_TXN_EVENTS", 3000))
	gc.Seed = seed + 1_000_003
	var others []gen.Record
	for _, r := range gen.New(gc).Log(len(log)) {
		if !r.Poison {
			others = append(others, r)
		}
	}

	httpAddr := freeAddr(t)
	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_KAFKA_TOPICS=" + strings.Join(topics, ","),
		"PROJECTOR_KAFKA_DLQ_TOPIC=" + dlq,
		"PROJECTOR_KAFKA_GROUP_ID=" + group,
		"PROJECTOR_REDIS_ADDRS=" + strings.Join(addrs, ","),
		"PROJECTOR_REDIS_MODE=" + mode,
		"PROJECTOR_BATCH_MAX_EVENTS=300",
		"PROJECTOR_LOG_LEVEL=warn",
	}
	c := startConsumer(t, append(env, "PROJECTOR_HTTP_ADDR="+httpAddr))

	committer, aborter, holder := txnClient(t, brokers, name+"-committer"), txnClient(t, brokers, name+"-aborter"),
		txnClient(t, brokers, name+"-holder")
	plain := plainClient(t, brokers)
	const chunk = 150
	chunks := split(log, (len(log)+chunk-1)/chunk)
	var nextOther, nextPoison int
	aborted := func(n int) []*kgo.Record { // other events, and a few poison records
		var recs []*kgo.Record
		for range n {
			recs = append(recs, kgoRecord(others[nextOther%len(others)]))
			nextOther++
		}
		for i := range 3 {
			nextPoison++
			recs = append(recs, &kgo.Record{Topic: topics[i], Partition: int32(nextPoison % txnPartitions), Key: []byte("u1"),
				Value: fmt.Appendf(nil, "aborted poison %d", nextPoison)})
		}
		return recs
	}
	held := false
	for i, ch := range chunks {
		recs := kgoRecords(ch)
		switch {
		case !held && i >= len(chunks)/2 && i+1 < len(chunks):
			// A transaction left open: the records after it in its
			// partitions wait until it commits.
			held = true
			holdOpen(t, ctx, brokers, group, holder, recs, func() {
				// Later transactions commit meanwhile.
				inTxn(t, committer, true, kgoRecords(chunks[i+1]))
				inTxn(t, aborter, false, aborted(40))
			})
			chunks[i+1] = nil
		case ch == nil: // written while the transaction was held open
		case i%4 == 0:
			inTxn(t, committer, true, recs)
		case i%4 == 1:
			inTxn(t, aborter, false, aborted(60))
			inTxn(t, committer, true, recs)
		case i%4 == 2:
			// An aborted transaction interleaved with a committed one, in
			// the same partitions.
			begin(t, aborter)
			send(t, aborter, aborted(30))
			begin(t, committer)
			send(t, committer, recs[:len(recs)/2])
			send(t, aborter, aborted(30))
			send(t, committer, recs[len(recs)/2:])
			end(t, committer, true)
			end(t, aborter, false)
		default:
			// Records outside transactions, while an aborted one is open.
			begin(t, aborter)
			send(t, aborter, aborted(50))
			send(t, plain, recs)
			end(t, aborter, false)
		}
	}
	// The log ends with markers: a committed transaction's, then an
	// aborted one's.
	inTxn(t, aborter, false, aborted(30))

	waitTxnCaughtUp(t, c, brokers, group, topics, httpAddr)
	checkModel(t, rdb, log, start)
	checkDeadLetters(t, brokers, topics, dlq, log)

	// Redis loses everything; the replayer reads the same committed records.
	if err := flushAll(ctx); err != nil {
		t.Fatal(err)
	}
	waitLossReported(t, httpAddr)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rp := exec.CommandContext(rctx, replayerBin)
	rp.Env = cleanEnv(env)
	out, err := rp.CombinedOutput()
	if err != nil {
		t.Fatalf("replayer: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "replayed ") {
		t.Errorf("replayer printed no summary:\n%s", out)
	}
	t.Logf("replayer: %s", tail(string(out), 300))
	if !waitMetric(httpAddr, "projector_redis_data_lost 0", 8*time.Second) {
		t.Errorf("data-lost metric not reset within 8 s after the replay")
	}
	waitTxnCaughtUp(t, c, brokers, group, topics, httpAddr)
	c.term(t)
	checkModel(t, rdb, log, start)
}

// holdOpen writes recs in a transaction of holder, runs meanwhile (more
// transactions that commit behind it), checks that the consumer commits up
// to the open transaction's first offset of each of its partitions and no
// further, for a few seconds, then commits the transaction.
func holdOpen(t *testing.T, ctx context.Context, brokers []string, group string, holder *kgo.Client, recs []*kgo.Record, meanwhile func()) {
	t.Helper()
	begin(t, holder)
	res := holder.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	firsts := map[offsets.TopicPartition]int64{}
	for _, r := range res {
		tp := offsets.TopicPartition{Topic: r.Record.Topic, Partition: int(r.Record.Partition)}
		if f, ok := firsts[tp]; !ok || r.Record.Offset < f {
			firsts[tp] = r.Record.Offset
		}
	}
	meanwhile()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	atFirsts := func() (bool, string) {
		parts := map[string][]int{}
		for tp := range firsts {
			parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
		}
		res, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
		if err != nil {
			return false, err.Error()
		}
		ok, detail := true, ""
		for topic, ps := range res.Topics {
			for _, p := range ps {
				f := firsts[offsets.TopicPartition{Topic: topic, Partition: p.Partition}]
				if p.CommittedOffset > f {
					t.Fatalf("%s/%d committed %d, past the open transaction's first offset %d", topic, p.Partition, p.CommittedOffset, f)
				}
				if p.CommittedOffset != f {
					ok = false
					detail += fmt.Sprintf(" %s/%d=%d/%d", topic, p.Partition, p.CommittedOffset, f)
				}
			}
		}
		return ok, detail
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, detail := atFirsts()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consumer did not reach the open transaction's first offsets:%s", detail)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for until := time.Now().Add(3 * time.Second); time.Now().Before(until); time.Sleep(500 * time.Millisecond) {
		atFirsts() // fails the test when a committed offset passes the open transaction
	}
	end(t, holder, true)
}

// waitTxnCaughtUp waits until the group's committed offsets reach the end
// (high watermark) of every partition, markers included, and the
// consumer's projector_consumer_lag is 0 on each of them.
func waitTxnCaughtUp(t *testing.T, c *proc, brokers []string, group string, topics []string, httpAddr string) {
	t.Helper()
	if err := waitCaughtUp(brokers, group, topics, 2*time.Minute); err != nil {
		c.dumpStacks()
		t.Fatal(err)
	}
	want := len(topics) * txnPartitions
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, metrics := get("http://" + httpAddr + "/metrics")
		lags, nonzero := 0, ""
		sc := bufio.NewScanner(strings.NewReader(metrics))
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "projector_consumer_lag{") {
				continue
			}
			lags++
			if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err != nil || v != 0 {
				nonzero += "\n" + line
			}
		}
		if lags == want && nonzero == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("projector_consumer_lag: %d partitions of %d, not 0:%s", lags, want, nonzero)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// txnClient is a transactional producer with id.
func txnClient(t *testing.T, brokers []string, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// plainClient is a producer outside transactions.
func plainClient(t *testing.T, brokers []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// kgoRecord is r for franz-go, in the partition the tests' kafka-go writer
// picks (newWriter: the key's hash, the next one for OtherPartition).
func kgoRecord(r gen.Record) *kgo.Record {
	parts := make([]int, txnPartitions)
	for i := range parts {
		parts[i] = i
	}
	p := movingBalancer{}.Balance(messages([]gen.Record{r})[0], parts...)
	return &kgo.Record{Topic: r.Topic, Partition: int32(p), Key: r.Key, Value: r.Value}
}

func kgoRecords(recs []gen.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		out[i] = kgoRecord(r)
	}
	return out
}

func begin(t *testing.T, cl *kgo.Client) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
}

// send writes recs and waits for their acknowledgement.
func send(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// end commits or aborts the open transaction.
func end(t *testing.T, cl *kgo.Client, commit bool) {
	t.Helper()
	if err := cl.EndTransaction(context.Background(), kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// inTxn writes recs in one transaction and commits or aborts it.
func inTxn(t *testing.T, cl *kgo.Client, commit bool, recs []*kgo.Record) {
	t.Helper()
	begin(t, cl)
	send(t, cl, recs)
	end(t, cl, commit)
}
