package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/gen"
	"projector/internal/testing/testkafka"
	"projector/internal/testing/testredis"
)

// missingTopicsMsg is the consumer's warning while configured topics do not exist.
const missingTopicsMsg = "configured Kafka topics do not exist"

// TestTopicsCreatedLaterApacheKafka: a real broker with automatic topic
// creation off, the consumer started before its topics exist. It answers
// /readyz 503 naming them and warns once; two topics created 5 s later are
// consumed while the third is still missing (one more warning, naming it);
// the third is consumed once created and readiness returns; partitions added
// to a topic while the consumer runs are consumed too. At the end every key
// equals the model and the dead-letter topic holds the poison records once.
func TestTopicsCreatedLaterApacheKafka(t *testing.T) {
	runTopicsLater(t, false)
}

// TestTopicsAutoCreatedApacheKafka: the same with automatic topic creation on,
// where the first produce creates the topics: the consumer must not create
// them itself (it asks for metadata without auto-creation), picks them up
// once the producer did, and picks up partitions added later.
func TestTopicsAutoCreatedApacheKafka(t *testing.T) {
	runTopicsLater(t, true)
}

func runTopicsLater(t *testing.T, autoCreate bool) {
	views, clicks, orders, dlq := "shop.views", "shop.clicks", "shop.orders", "shop.dlq"
	topics := []string{views, clicks, orders}
	props := []string{"auto.create.topics.enable=false"}
	if autoCreate {
		props = []string{"auto.create.topics.enable=true", "num.partitions=2"}
	}
	broker := testkafka.Start(t, testkafka.WithProps(props...))
	if !autoCreate {
		broker.CreateTopic(t, dlq, 1)
	}
	brokers := broker.Addrs()
	srv := testredis.StartStandalone(t)
	httpAddr := freeAddr(t)

	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = testSeed(t)
	gc.Start, gc.Span = start.Add(-6*time.Hour), 6*time.Hour
	log := gen.New(gc).Log(envInt("E2E_EVENTS", 4000))
	first, second := log[:len(log)/2], log[len(log)/2:]

	c := startConsumer(t, []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + srv.Addr(),
		"PROJECTOR_BATCH_MAX_EVENTS=200",
		"PROJECTOR_LOG_FORMAT=json",
		"PROJECTOR_HTTP_ADDR=" + httpAddr,
	})
	waitReadyz(t, httpAddr, http.StatusServiceUnavailable, topics, nil)
	time.Sleep(time.Until(c.started.Add(5 * time.Second)))
	for _, topic := range topics {
		if topicExists(t, brokers, topic) {
			t.Fatalf("topic %s exists 5 s after the consumer started: nobody but the consumer can have created it", topic)
		}
	}

	if autoCreate {
		produceAll(t, brokers, first, true)
		created := time.Now()
		waitReadyz(t, httpAddr, http.StatusOK, nil, nil)
		waitConsumed(t, brokers, topics, "topics created by the first produce", created)
	} else {
		broker.CreateTopic(t, views, 2)
		broker.CreateTopic(t, clicks, 2)
		created := time.Now()
		produceAll(t, brokers, onTopics(first, views, clicks), false)
		waitConsumed(t, brokers, []string{views, clicks}, "two of three topics created", created)
		waitReadyz(t, httpAddr, http.StatusServiceUnavailable, []string{orders}, []string{views, clicks})

		broker.CreateTopic(t, orders, 2)
		created = time.Now()
		waitReadyz(t, httpAddr, http.StatusOK, nil, nil)
		t.Logf("ready %v after the last topic was created", time.Since(created).Round(time.Millisecond))
		produceAll(t, brokers, onTopics(first, orders), false)
		waitConsumed(t, brokers, topics, "the last topic created", created)
	}

	// Scale-out: the views topic gets more partitions. The records before
	// are all applied, so each user's events stay in order across the move.
	before := len(partitionEnds(t, brokers, views, 0))
	broker.AddPartitions(t, views, before+2)
	added := time.Now()
	produceAll(t, brokers, second, autoCreate)
	ends := partitionEnds(t, brokers, views, before+2)
	if ends[before] == 0 || ends[before+1] == 0 {
		t.Fatalf("end offsets of %s after adding 2 partitions: %v; want records on the new partitions %d and %d", views, ends, before, before+1)
	}
	waitConsumed(t, brokers, topics, "partitions added", added)
	waitReadyz(t, httpAddr, http.StatusOK, nil, nil)
	c.term(t)

	checkModel(t, srv.Client(), log, start)
	checkDeadLetters(t, brokers, topics, dlq, log)
	checkMissingWarnings(t, missingTopicWarnings(t, c.log.String()), topics, autoCreate)
}

// checkMissingWarnings asserts one warning per change of the missing topics:
// the first names every topic, and each later one fewer. With topics created
// by hand that is exactly two lines (all, then shop.orders); the first
// produce creates topics one after the other, so up to one line per topic.
func checkMissingWarnings(t *testing.T, warnings [][]string, topics []string, autoCreate bool) {
	t.Helper()
	if !autoCreate {
		if want := [][]string{topics, {"shop.orders"}}; fmt.Sprint(warnings) != fmt.Sprint(want) {
			t.Errorf("missing-topic warnings name %v, want one line per change: %v", warnings, want)
		}
		return
	}
	if len(warnings) == 0 || fmt.Sprint(warnings[0]) != fmt.Sprint(topics) {
		t.Fatalf("missing-topic warnings name %v, want the first naming %v", warnings, topics)
	}
	for i := 1; i < len(warnings); i++ {
		prev, cur := warnings[i-1], warnings[i]
		if len(cur) == 0 || len(cur) >= len(prev) || !containsAll(strings.Join(prev, " "), cur) {
			t.Errorf("missing-topic warning %d names %v after %v: want fewer topics, one line per change", i, cur, prev)
		}
	}
}

// onTopics returns the records of log on the given topics, in log order.
func onTopics(log []gen.Record, topics ...string) []gen.Record {
	var out []gen.Record
	for _, r := range log {
		if slices.Contains(topics, r.Topic) {
			out = append(out, r)
		}
	}
	return out
}

// produceAll publishes recs in order and fails t on error; with autoCreate
// the writer asks the broker to create missing topics. Its Transport is its
// own: kafka-go's default one caches metadata for up to 6 s, which would hide
// topics and partitions created just before.
func produceAll(t *testing.T, brokers []string, recs []gen.Record, autoCreate bool) {
	t.Helper()
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Transport: transport, Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond,
		BatchSize: 200, RequiredAcks: kafka.RequireAll, MaxAttempts: 20, AllowAutoTopicCreation: autoCreate}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < len(recs); i += 200 {
		var msgs []kafka.Message
		for _, r := range recs[i:min(i+200, len(recs))] {
			msgs = append(msgs, kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value})
		}
		for {
			err := w.WriteMessages(ctx, msgs...)
			if err == nil {
				break
			}
			// A topic the first write auto-creates has no leader yet, and the
			// writer does not retry the metadata lookup itself.
			if !autoCreate || ctx.Err() != nil || !errors.Is(err, kafka.UnknownTopicOrPartition) && !errors.Is(err, kafka.LeaderNotAvailable) {
				t.Fatalf("produce records %d..: %v", i, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// waitConsumed waits until the group committed the end of every partition of
// topics, and logs how long that took since what happened at since.
func waitConsumed(t *testing.T, brokers, topics []string, what string, since time.Time) {
	t.Helper()
	for _, topic := range topics {
		partitionEnds(t, brokers, topic, 0) // so waitCaughtUp sees the topic
	}
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		t.Fatalf("after %s: %v", what, err)
	}
	t.Logf("%v consumed %v after %s", topics, time.Since(since).Round(time.Millisecond), what)
}

// waitReadyz waits up to 30 s until /readyz answers code with a body naming
// every one of with and none of without.
func waitReadyz(t *testing.T, httpAddr string, code int, with, without []string) {
	t.Helper()
	var gotCode int
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		gotCode, body = get("http://" + httpAddr + "/readyz")
		if gotCode == code && containsAll(body, with) && !containsAny(body, without) {
			return
		}
	}
	t.Fatalf("/readyz = %d %q; want %d naming %v and not %v", gotCode, body, code, with, without)
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// topicExists asks the broker, without auto-creation and without a
// metadata cache, whether topic exists.
func topicExists(t *testing.T, brokers []string, topic string) bool {
	t.Helper()
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second, Transport: transport}
	meta, err := client.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	return len(meta.Topics) == 1 && meta.Topics[0].Error == nil && len(meta.Topics[0].Partitions) > 0
}

// partitionEnds returns the end offset of each partition of topic, by
// partition, once kafka-go's default Transport (which waitCaughtUp uses)
// reports n partitions (0: any number); its metadata lags behind by up to 6 s.
func partitionEnds(t *testing.T, brokers []string, topic string, n int) []int64 {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	var ends map[string]int64
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ends, _, err = endOffsets(context.Background(), client, []string{topic})
		if err == nil && len(ends) > 0 && (n == 0 || len(ends) == n) {
			break
		}
	}
	if err != nil || len(ends) == 0 || n > 0 && len(ends) != n {
		t.Fatalf("end offsets of %s: %v (err %v), want %d partitions", topic, ends, err, n)
	}
	out := make([]int64, len(ends))
	for p := range out {
		end, ok := ends[fmt.Sprintf("%s:%d", topic, p)]
		if !ok {
			t.Fatalf("no end offset for partition %d of %s: %v", p, topic, ends)
		}
		out[p] = end
	}
	return out
}

// missingTopicWarnings returns, for each missing-topic warning in the
// consumer's JSON log, the topics it names.
func missingTopicWarnings(t *testing.T, log string) [][]string {
	t.Helper()
	var out [][]string
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Level   string   `json:"level"`
			Msg     string   `json:"msg"`
			Missing []string `json:"missing"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || !strings.HasPrefix(line.Msg, missingTopicsMsg) {
			continue
		}
		if line.Level != "warn" {
			t.Errorf("missing-topic line at level %q, want warn: %s", line.Level, sc.Text())
		}
		out = append(out, line.Missing)
	}
	return out
}
