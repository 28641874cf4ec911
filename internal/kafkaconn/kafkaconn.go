// Package kafkaconn turns the kafka.* connection settings (brokers, SASL
// PLAIN or SCRAM, TLS) into the kafka-go values every construction site
// needs: a Dialer for kafka-go Readers and consumer groups, a Transport for
// Writers and Clients, and Transports of their own for internal/fetch.
package kafkaconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"projector/internal/config"
)

// dialTimeout bounds establishing one connection, TLS and SASL included.
const dialTimeout = 10 * time.Second

// Conn holds the connection settings of one Kafka cluster. It is safe for
// concurrent use; its Transport is shared by every Writer and Client made
// from it.
type Conn struct {
	brokers   []string
	mechanism sasl.Mechanism // nil: no SASL
	tls       *tls.Config    // nil: plaintext
	transport *kafka.Transport
}

// New builds a Conn from validated configuration (config.Load checked the
// mechanism, read password_file into Password and built TLS.Client).
func New(cfg config.KafkaConfig) (*Conn, error) {
	mech, err := mechanism(cfg.SASL)
	if err != nil {
		return nil, err
	}
	c := &Conn{brokers: cfg.Brokers, mechanism: mech}
	if cfg.TLS.Client != nil {
		c.tls = cfg.TLS.Client.Clone()
	}
	c.transport = &kafka.Transport{DialTimeout: dialTimeout, SASL: c.mechanism, TLS: c.tlsConfig()}
	return c, nil
}

// Plain returns a Conn to brokers without SASL or TLS.
func Plain(brokers []string) *Conn {
	c, _ := New(config.KafkaConfig{Brokers: brokers}) // no mechanism: cannot fail
	return c
}

// mechanism returns the SASL mechanism of s, or nil when none is configured.
func mechanism(s config.SASLConfig) (sasl.Mechanism, error) {
	var (
		m   sasl.Mechanism
		err error
	)
	switch s.Mechanism {
	case "":
		return nil, nil
	case config.SASLPlain:
		m = plain.Mechanism{Username: s.Username, Password: s.Password}
	case config.SASLScramSHA256:
		m, err = scram.Mechanism(scram.SHA256, s.Username, s.Password)
	case config.SASLScramSHA512:
		m, err = scram.Mechanism(scram.SHA512, s.Username, s.Password)
	default:
		return nil, fmt.Errorf("kafka.sasl.mechanism: unknown mechanism %q", s.Mechanism)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka.sasl: set up %s for user %q: %w", s.Mechanism, s.Username, err)
	}
	return m, nil
}

// tlsConfig returns a copy of the TLS settings (nil for plaintext): kafka-go
// sets the server name on the copy it is given.
func (c *Conn) tlsConfig() *tls.Config {
	if c.tls == nil {
		return nil
	}
	return c.tls.Clone()
}

// Brokers returns the bootstrap addresses.
func (c *Conn) Brokers() []string { return c.brokers }

// Secured reports whether SASL or TLS is configured.
func (c *Conn) Secured() bool { return c.mechanism != nil || c.tls != nil }

// Dialer returns a new Dialer for kafka.ReaderConfig.Dialer.
func (c *Conn) Dialer() *kafka.Dialer {
	return &kafka.Dialer{Timeout: dialTimeout, DualStack: true, SASLMechanism: c.mechanism, TLS: c.tlsConfig()}
}

// Transport returns the shared Transport for kafka.Writer and kafka.Client.
func (c *Conn) Transport() *kafka.Transport { return c.transport }

// Client returns a Client of the brokers whose requests time out after
// timeout.
func (c *Conn) Client(timeout time.Duration) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(c.brokers...), Timeout: timeout, Transport: c.transport}
}

// WatchClient returns a Client for watching the metadata of topics, and a
// function that closes its connections. kafka-go answers a Client's Metadata
// requests from its Transport's cache, which the shared Transport refreshes
// only every 6 s or so and for every topic of the cluster; this Client's
// Transport is its own, caches topics only and refreshes them at random
// intervals below ttl, so a Metadata answer is never older than ttl.
func (c *Conn) WatchClient(topics []string, ttl, timeout time.Duration) (*kafka.Client, func()) {
	t := &kafka.Transport{DialTimeout: dialTimeout, SASL: c.mechanism, TLS: c.tlsConfig(), MetadataTTL: ttl,
		MetadataTopics: topics}
	return &kafka.Client{Addr: kafka.TCP(c.brokers...), Timeout: timeout, Transport: t}, t.CloseIdleConnections
}

// fetchMetadataTTL bounds the age of a FetchTransport's metadata.
const fetchMetadataTTL = time.Second

// FetchTransport returns a Transport of its own for reading partitions of
// topics with internal/fetch: it routes each fetch to the partition's
// leader by metadata of those topics that it refreshes at random intervals
// below a second, so after a leader change fetches reach the new leader
// within about that (the shared Transport refreshes every 6 s or so). Close
// it with CloseIdleConnections.
func (c *Conn) FetchTransport(topics []string) *kafka.Transport {
	return &kafka.Transport{DialTimeout: dialTimeout, SASL: c.mechanism, TLS: c.tlsConfig(), MetadataTTL: fetchMetadataTTL,
		MetadataTopics: topics}
}

// Close closes the idle connections of the shared Transport.
func (c *Conn) Close() { c.transport.CloseIdleConnections() }

// Check asks the brokers for their metadata once. It returns nil on success,
// and otherwise an error that Permanent classifies.
func (c *Conn) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*dialTimeout)
	defer cancel()
	if _, err := c.Client(dialTimeout).Metadata(ctx, &kafka.MetadataRequest{}); err != nil {
		return fmt.Errorf("connect to kafka %v: %w", c.brokers, err)
	}
	return nil
}

// Permanent reports whether err is one that retrying cannot fix: the broker
// refused the SASL credentials or mechanism, or the TLS handshake failed on
// configuration (unknown authority, wrong name, a TLS client talking to a
// plaintext listener).
func Permanent(err error) bool {
	return errors.Is(err, kafka.SASLAuthenticationFailed) || errors.Is(err, kafka.UnsupportedSASLMechanism) ||
		errors.Is(err, kafka.IllegalSASLState) || config.TLSSetupError(err)
}
