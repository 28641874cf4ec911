package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/gen"
	"projector/internal/testing/corpus"
	"projector/internal/testing/testkafka"
	"projector/internal/testing/testredis"
)

// TestBadInputApacheKafka sends the whole bad-input corpus (internal/testing/corpus:
// every rule of docs/contract.md section 2, invalid UTF-8, duplicate keys, deep nesting,
// numbers as strings, negative and overflowing numbers, NUL bytes, braces and
// newlines in ids) and a 2 MiB record through a real broker, between valid
// events. Each bad record must land in the dead-letter topic once, with a
// reason naming its field and rule; the consumer must keep running; the valid
// events must be applied as the model says.
func TestBadInputApacheKafka(t *testing.T) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	broker := testkafka.Start(t, testkafka.WithProps("message.max.bytes=8388608", "replica.fetch.max.bytes=8388608"))
	for _, topic := range topics {
		broker.CreateTopic(t, topic, 2)
	}
	broker.CreateTopic(t, "shop.dlq", 1)
	brokers := broker.Addrs()
	srv := testredis.StartStandalone(t)
	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = testSeed(t)
	gc.Start, gc.Span = start.Add(-2*time.Hour), 2*time.Hour
	valid := gen.New(gc).Log(600)

	// The corpus records, interleaved with the valid ones, on every topic.
	wantReason := map[string][]string{} // value -> substrings its reason must contain
	var log []gen.Record
	cases := corpus.Cases()
	big := corpus.Rec("view", `"product_id":"p1","pad":"`+strings.Repeat("x", 2<<20)+`"`)
	for i := range max(len(cases), len(valid)) {
		if i < len(valid) {
			log = append(log, valid[i])
		}
		if i < len(cases) {
			c := cases[i]
			v := c.In
			if _, dup := wantReason[v]; dup {
				continue // two cases with the same bytes: one record suffices
			}
			wantReason[v] = []string{reasonPrefix(c.Field), c.Rule}
			log = append(log, gen.Record{Topic: topics[i%3], Key: []byte(fmt.Sprintf("bad-%d", i)), Value: []byte(v), Poison: true})
		}
	}
	wantReason[big] = []string{reasonPrefix("record"), "larger than kafka.max_record_bytes (1048576 bytes)"}
	log = append(log, gen.Record{Topic: "shop.views", Key: []byte("big"), Value: []byte(big), Poison: true})

	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + srv.Addr(),
		"PROJECTOR_BATCH_MAX_EVENTS=100",
		"PROJECTOR_LOG_LEVEL=warn",
		"PROJECTOR_HTTP_ADDR=127.0.0.1:0",
	}
	c := startConsumer(t, env)
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond,
		BatchSize: 50, BatchBytes: 8 << 20, RequiredAcks: kafka.RequireAll, MaxAttempts: 10}
	defer w.Close()
	for i := 0; i < len(log); i += 50 {
		var msgs []kafka.Message
		for _, r := range log[i:min(i+50, len(log))] {
			msgs = append(msgs, kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		c.dumpStacks()
		t.Fatal(err)
	}
	select {
	case err := <-c.done:
		c.done <- err
		t.Fatalf("the consumer stopped on bad input: %v\n%s", err, tail(c.log.String(), 2000))
	default:
	}
	c.term(t)

	checkDeadLetters(t, brokers, topics, "shop.dlq", log)
	seen := map[string]bool{} // a generated poison record may have the same bytes as a corpus one
	for _, d := range readAll(t, brokers, []string{"shop.dlq"}) {
		want, ok := wantReason[d.Value]
		if !ok {
			continue // a poison record of the generator's own
		}
		seen[d.Value] = true
		for _, sub := range want {
			if !strings.Contains(d.Headers["error"], sub) {
				t.Errorf("dead letter %.80q: reason %q does not contain %q", d.Value, d.Headers["error"], sub)
			}
		}
	}
	if len(seen) != len(wantReason) {
		t.Errorf("%d of the %d corpus records in the dead-letter topic", len(seen), len(wantReason))
	}
	checkModel(t, srv.Client(), log, start)
}

// reasonPrefix is how a dead-letter reason starts for an error in field.
func reasonPrefix(field string) string {
	if field == "record" {
		return "record: "
	}
	return fmt.Sprintf("field %q: ", field)
}
