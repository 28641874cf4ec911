package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/gen"
	"projector/internal/testing/testkafka"
	"projector/internal/testing/testredis"
	"projector/internal/testing/testtls"
)

const (
	kafkaUser   = "projector"
	kafkaSecret = "k4fka-Secret-for-tests"
	records     = 300
)

var inputTopics = []string{"shop.views", "shop.clicks", "shop.orders"}

// startSecureKafka starts a broker with the SECURE listener of opts and
// publishes records valid events (no duplicates, no poison) through its
// PLAINTEXT listener.
func startSecureKafka(t *testing.T, opts ...testkafka.Option) *testkafka.Broker {
	t.Helper()
	b := testkafka.Start(t, opts...)
	for _, topic := range append(inputTopics, "shop.dlq") {
		b.CreateTopic(t, topic, 2)
	}
	gc := gen.DefaultConfig()
	gc.DupRate, gc.PoisonRate = 0, 0
	g := gen.New(gc)
	msgs := make([]kafka.Message, 0, records)
	for range records {
		r := g.Next(time.Now())
		msgs = append(msgs, kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value})
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("publish: %v", err)
	}
	return b
}

// eventsCounted sums projector_events_total over its labels.
func eventsCounted(metrics string) (total, applied int) {
	for _, l := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(l, "projector_events_total{") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			continue
		}
		total += int(v)
		if strings.Contains(l, `outcome="applied"`) {
			applied += int(v)
		}
	}
	return total, applied
}

// consumeAll runs the consumer binary with env against a fresh Redis until
// it has counted every published record, checks that it applied them and
// that secret appears neither in its log nor on /metrics.
func consumeAll(t *testing.T, secret string, env ...string) {
	t.Helper()
	rs := testredis.StartStandalone(t)
	p := startBinary(t, append(env, "PROJECTOR_REDIS_ADDRS="+rs.Addr(), "PROJECTOR_LOG_LEVEL=debug")...)
	deadline := time.Now().Add(2 * time.Minute)
	var metrics string
	for {
		metrics = p.metrics(t)
		total, _ := eventsCounted(metrics)
		if total >= records {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer counted %d of %d records after 2 minutes", total, records)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if total, applied := eventsCounted(metrics); total != records || applied == 0 {
		t.Fatalf("counted %d records (%d applied), want %d with some applied", total, applied, records)
	}
	if n, err := rs.Client().DBSize(context.Background()).Result(); err != nil || n == 0 {
		t.Fatalf("redis holds %d keys (%v): nothing applied", n, err)
	}
	assertNoSecret(t, "/metrics", metrics, secret)
	if code := p.stop(t); code != 0 {
		t.Fatalf("consumer exited %d after SIGTERM", code)
	}
	assertNoSecret(t, "the log", p.out.String(), secret)
}

// The consumer consumes and applies through SASL/PLAIN and SCRAM-SHA-512,
// and a wrong password stops its start-up with one clear error line.
func TestConsumerThroughSASL(t *testing.T) {
	b := startSecureKafka(t, testkafka.WithSASL(map[string]string{kafkaUser: kafkaSecret}))
	sasl := func(mech, group string) []string {
		return []string{"PROJECTOR_KAFKA_BROKERS=" + b.SecureAddr(), "PROJECTOR_KAFKA_GROUP_ID=" + group,
			"PROJECTOR_KAFKA_SASL_MECHANISM=" + mech, "PROJECTOR_KAFKA_SASL_USERNAME=" + kafkaUser}
	}
	t.Run("plain", func(t *testing.T) {
		consumeAll(t, kafkaSecret, append(sasl("plain", "g-plain"), "PROJECTOR_KAFKA_SASL_PASSWORD="+kafkaSecret)...)
	})
	t.Run("scram-sha-512", func(t *testing.T) {
		consumeAll(t, kafkaSecret, append(sasl("scram-sha-512", "g-scram"), "PROJECTOR_KAFKA_SASL_PASSWORD="+kafkaSecret)...)
	})
	t.Run("wrong password", func(t *testing.T) {
		wrong := "wrong-" + kafkaSecret
		rs := testredis.StartStandalone(t)
		p := startBinary(t, append(sasl("scram-sha-512", "g-wrong"), "PROJECTOR_KAFKA_SASL_PASSWORD="+wrong, "PROJECTOR_REDIS_ADDRS="+rs.Addr())...)
		if code := p.wait(t, time.Minute); code == 0 {
			t.Fatal("consumer exited 0 with a wrong Kafka password")
		}
		errs := p.errorLines()
		if len(errs) != 1 || !strings.Contains(errs[0], "kafka refused the SASL credentials") {
			t.Fatalf("want one error line saying Kafka refused the credentials, got %d:\n%s", len(errs), strings.Join(errs, "\n"))
		}
		assertNoSecret(t, "the output", p.out.String(), wrong)
	})
}

// The consumer consumes and applies through TLS (trusting the test CA), and
// refuses to start when it does not trust the broker's certificate.
func TestConsumerThroughTLS(t *testing.T) {
	certs := testtls.New(t)
	b := startSecureKafka(t, testkafka.WithTLS(certs))
	env := []string{"PROJECTOR_KAFKA_BROKERS=" + b.SecureAddr(), "PROJECTOR_KAFKA_TLS_ENABLED=true"}
	t.Run("trusted", func(t *testing.T) {
		consumeAll(t, "-----BEGIN", append(env, "PROJECTOR_KAFKA_TLS_CA_FILE="+certs.CA, "PROJECTOR_KAFKA_GROUP_ID=g-tls")...)
	})
	t.Run("unknown CA", func(t *testing.T) {
		rs := testredis.StartStandalone(t)
		p := startBinary(t, append(env, "PROJECTOR_KAFKA_TLS_CA_FILE="+testtls.New(t).CA, "PROJECTOR_REDIS_ADDRS="+rs.Addr())...)
		if code := p.wait(t, time.Minute); code == 0 {
			t.Fatal("consumer exited 0 with an untrusted broker certificate")
		}
		if errs := p.errorLines(); len(errs) != 1 || !strings.Contains(errs[0], "kafka TLS handshake failed") {
			t.Fatalf("want one error line about the TLS handshake, got %d:\n%s", len(errs), strings.Join(errs, "\n"))
		}
	})
}
