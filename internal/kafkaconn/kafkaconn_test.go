package kafkaconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/segmentio/kafka-go"

	"projector/internal/config"
)

func TestMechanisms(t *testing.T) {
	for mech, name := range map[string]string{
		config.SASLPlain: "PLAIN", config.SASLScramSHA256: "SCRAM-SHA-256", config.SASLScramSHA512: "SCRAM-SHA-512",
	} {
		c, err := New(config.KafkaConfig{Brokers: []string{"k:9092"},
			SASL: config.SASLConfig{Mechanism: mech, Username: "u", Password: "p"}})
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		if got := c.Dialer().SASLMechanism; got == nil || got.Name() != name {
			t.Errorf("%s: dialer mechanism %v, want %s", mech, got, name)
		}
		if got := c.Transport().SASL; got == nil || got.Name() != name {
			t.Errorf("%s: transport mechanism %v, want %s", mech, got, name)
		}
		if !c.Secured() {
			t.Errorf("%s: not Secured", mech)
		}
	}
}

func TestTLSAndPlain(t *testing.T) {
	tc := &tls.Config{ServerName: "kafka.internal", MinVersion: tls.VersionTLS12}
	c, err := New(config.KafkaConfig{Brokers: []string{"k:9093"}, TLS: config.TLSConfig{Enabled: true, Client: tc}})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Dialer()
	if d.TLS == nil || d.TLS == tc || d.TLS.ServerName != "kafka.internal" || c.Transport().TLS == nil {
		t.Fatalf("TLS not passed on as a copy: dialer %+v", d.TLS)
	}
	p := Plain([]string{"a:1", "b:2"})
	if p.Secured() || p.Dialer().TLS != nil || p.Dialer().SASLMechanism != nil || len(p.Client(0).Addr.String()) == 0 {
		t.Fatalf("Plain is secured: %+v", p.Dialer())
	}
}

func TestPermanent(t *testing.T) {
	cases := map[error]bool{
		fmt.Errorf("connect: %w", kafka.SASLAuthenticationFailed): true,
		kafka.UnsupportedSASLMechanism:                            true,
		errors.New("remote error: tls: bad certificate"):          true,
		fmt.Errorf("dial: %w", io.EOF):                            false,
		errors.New("dial tcp 127.0.0.1:9: connection refused"):    false,
	}
	for err, want := range cases {
		if got := Permanent(err); got != want {
			t.Errorf("Permanent(%v) = %v, want %v", err, got, want)
		}
	}
	msg := SetupError(kafka.SASLAuthenticationFailed).Error()
	if want := "kafka refused the SASL credentials"; len(msg) < len(want) || msg[:len(want)] != want {
		t.Errorf("SetupError = %q", msg)
	}
}
