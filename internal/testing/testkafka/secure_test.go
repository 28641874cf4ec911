package testkafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/scram"

	"projector/internal/testing/testtls"
)

// metadataVia asks addr for metadata through a transport with mech and tc.
func metadataVia(addr string, mech sasl.Mechanism, b *Broker) error {
	tr := &kafka.Transport{DialTimeout: 5 * time.Second, SASL: mech, TLS: b.clientTLS()}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 5 * time.Second, Transport: tr}
	_, err := client.Metadata(ctx, &kafka.MetadataRequest{})
	return err
}

func TestSASLSSLListener(t *testing.T) {
	b := Start(t, WithSASL(map[string]string{"alice": "alice-secret"}), WithTLS(testtls.New(t)))
	if b.SecureAddr() == "" || b.SecureAddr() == b.Addr() {
		t.Fatalf("SecureAddr %q, Addr %q: want a separate listener", b.SecureAddr(), b.Addr())
	}
	// Start already authenticated with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
	wrong, err := scram.Mechanism(scram.SHA512, "alice", "not-the-secret")
	if err != nil {
		t.Fatal(err)
	}
	if err := metadataVia(b.SecureAddr(), wrong, b); !errors.Is(err, kafka.SASLAuthenticationFailed) {
		t.Fatalf("wrong SCRAM password: %v, want SASL authentication failed", err)
	}
	if err := metadataVia(b.SecureAddr(), plainMechanism("alice", "nope"), b); !errors.Is(err, kafka.SASLAuthenticationFailed) {
		t.Fatalf("wrong PLAIN password: %v, want SASL authentication failed", err)
	}
	b.CreateTopic(t, "through-plaintext", 1) // the PLAINTEXT listener stays open for admin work
}
