package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/testing/testkafka"
	"projector/internal/testing/testredis"
	"projector/internal/testing/testtls"
)

// The API measures lag through SASL (SCRAM-SHA-512) over TLS with the
// kafka.sasl and kafka.tls settings, and never shows the password.
func TestLagThroughSASLOverTLS(t *testing.T) {
	const user, secret = "dash", "d4shboard-Secret-for-tests"
	certs := testtls.New(t)
	b := testkafka.Start(t, testkafka.WithSASL(map[string]string{user: secret}), testkafka.WithTLS(certs))
	b.CreateTopic(t, "views", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), BatchTimeout: time.Millisecond}
	for i := range 5 {
		if err := w.WriteMessages(ctx, kafka.Message{Topic: "views", Value: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	_ = w.Close()
	commitOffset(ctx, t, b.Addr(), "g", "views", 2)
	rs := testredis.StartStandalone(t)
	rs.Client().HSet(ctx, "px:meta:{g}", "status", "ready")

	a := startAPI(t, []string{"--http-addr", "127.0.0.1:0", "--log-level", "error"}, []string{
		"PROJECTOR_REDIS_ADDRS=" + rs.Addr(), "PROJECTOR_KAFKA_BROKERS=" + b.SecureAddr(),
		"PROJECTOR_KAFKA_GROUP_ID=g", "PROJECTOR_KAFKA_TOPICS=views",
		"PROJECTOR_KAFKA_SASL_MECHANISM=scram-sha-512", "PROJECTOR_KAFKA_SASL_USERNAME=" + user,
		"PROJECTOR_KAFKA_SASL_PASSWORD=" + secret,
		"PROJECTOR_KAFKA_TLS_ENABLED=true", "PROJECTOR_KAFKA_TLS_CA_FILE=" + certs.CA})
	want := `"partitions":[{"topic":"views","partition":0,"end":5,"committed":2,"lag":3}]`
	var body string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		_, body = a.get(t, "/api/status")
		if strings.Contains(body, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/status after a minute: %s; want lag %s", body, want)
		}
	}
	if strings.Contains(body, `"error"`) {
		t.Errorf("/api/status reports an error with the lag: %s", body)
	}
	for _, path := range []string{"/api/status", "/metrics"} {
		if _, page := a.get(t, path); strings.Contains(page, secret) {
			t.Errorf("%s shows the Kafka password", path)
		}
	}
	if code := a.stop(); code != 0 {
		t.Fatalf("exit code %d after cancel", code)
	}
}

// commitOffset commits offset for partition 0 of topic in group, retrying
// while the broker's group coordinator is still loading.
func commitOffset(ctx context.Context, t *testing.T, addr, group, topic string, offset int64) {
	t.Helper()
	admin := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
	for {
		res, err := admin.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1,
			Topics: map[string][]kafka.OffsetCommit{topic: {{Partition: 0, Offset: offset}}}})
		if err == nil && len(res.Topics[topic]) == 1 {
			if err = res.Topics[topic][0].Error; err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("commit offset %d of %s/0 for group %s: %v", offset, topic, group, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
