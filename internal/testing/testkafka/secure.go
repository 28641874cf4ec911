package testkafka

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"hash"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/scram"

	"projector/internal/testing/testtls"
)

// secureListener names the extra client listener of WithSASL and WithTLS.
const secureListener = "SECURE"

// scramIterations is the iteration count of the SCRAM credentials (Kafka's
// minimum).
const scramIterations = 4096

// secureConfig is the choice of WithSASL and WithTLS.
type secureConfig struct {
	users map[string]string // SASL user -> password; nil: no SASL
	tls   *testtls.Files    // nil: no TLS
}

func (s secureConfig) enabled() bool { return s.users != nil || s.tls != nil }

// protocol is the security protocol of the SECURE listener.
func (s secureConfig) protocol() string {
	switch {
	case s.users != nil && s.tls != nil:
		return "SASL_SSL"
	case s.users != nil:
		return "SASL_PLAINTEXT"
	}
	return "SSL"
}

// WithSASL gives the broker (Start only) a second client listener, SECURE on
// SecureAddr, that requires SASL authentication with mechanism PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512 as one of users (name -> password; no
// quote or backslash in either). The SCRAM credentials are created through
// the PLAINTEXT listener (Addr) once the broker serves, which stays open
// for the test's own admin work. With WithTLS the listener is SASL_SSL.
func WithSASL(users map[string]string) Option {
	return func(c *config) { c.secure.users = maps.Clone(users) }
}

// WithTLS makes the SECURE listener (Start only; see WithSASL) use TLS with
// the server certificate of files (a PEM keystore, ssl.keystore.type=PEM)
// and trust files.CA. Clients need no certificate.
func WithTLS(files testtls.Files) Option {
	return func(c *config) { c.secure.tls = &files }
}

// SecureAddr returns the SECURE listener's address, "127.0.0.1:<port>"
// (empty without WithSASL or WithTLS).
func (b *Broker) SecureAddr() string {
	if b.securePort == 0 {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(b.securePort)
}

// secureArgs returns the --prop arguments that add the SECURE listener.
func (b *Broker) secureArgs() []string {
	s := b.cfg.secure
	if !s.enabled() {
		return nil
	}
	props := []string{
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d,%s://127.0.0.1:%d", b.port, b.port+1, secureListener, b.securePort),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d,%s://127.0.0.1:%d", b.port, secureListener, b.securePort),
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT," + secureListener + ":" + s.protocol(),
	}
	if s.users != nil {
		prefix := "listener.name." + strings.ToLower(secureListener) + "."
		var plain strings.Builder
		plain.WriteString("org.apache.kafka.common.security.plain.PlainLoginModule required")
		for _, u := range slices.Sorted(maps.Keys(s.users)) {
			fmt.Fprintf(&plain, " user_%s=%q", u, s.users[u])
		}
		plain.WriteString(";")
		props = append(props,
			"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
			prefix+"plain.sasl.jaas.config="+plain.String(),
			prefix+"scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
			prefix+"scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		)
	}
	if s.tls != nil {
		props = append(props,
			"ssl.keystore.type=PEM", "ssl.keystore.location="+s.tls.ServerKeystore,
			"ssl.truststore.type=PEM", "ssl.truststore.location="+s.tls.CA,
			"ssl.client.auth=none",
		)
	}
	var args []string
	for _, p := range props {
		args = append(args, "--prop", p)
	}
	return args
}

// setUpSecure creates the SCRAM credentials and waits until every user can
// authenticate on the SECURE listener with every mechanism.
func (b *Broker) setUpSecure(tb testing.TB) {
	tb.Helper()
	s := b.cfg.secure
	if !s.enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), topicTimeout)
	defer cancel()
	if s.users != nil {
		if err := b.addScramUsers(ctx, s.users); err != nil {
			tb.Fatalf("testkafka: %v", err)
		}
	}
	for _, mech := range b.mechanisms(tb) {
		if err := b.waitSecure(ctx, mech); err != nil {
			tb.Fatalf("testkafka: SECURE listener %s not usable: %v", b.SecureAddr(), err)
		}
	}
}

// addScramUsers stores SCRAM-SHA-256 and -512 credentials for users, one
// request per credential (Kafka refuses two for one user in a request).
func (b *Broker) addScramUsers(ctx context.Context, users map[string]string) error {
	// A Transport of its own: the default one would cache metadata from
	// before the test's topics exist and serve it to the test's clients.
	tr := &kafka.Transport{DialTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(b.Addr()), Timeout: 10 * time.Second, Transport: tr}
	hashes := map[kafka.ScramMechanism]func() hash.Hash{kafka.ScramMechanismSha256: sha256.New, kafka.ScramMechanismSha512: sha512.New}
	for name, pw := range users {
		for mech, h := range hashes {
			salt := make([]byte, 16)
			_, _ = rand.Read(salt)
			salted, err := saltedPassword(h, pw, salt)
			if err != nil {
				return err
			}
			up := kafka.UserScramCredentialsUpsertion{Name: name, Mechanism: mech, Iterations: scramIterations, Salt: salt, SaltedPassword: salted}
			res, err := client.AlterUserScramCredentials(ctx, &kafka.AlterUserScramCredentialsRequest{Upsertions: []kafka.UserScramCredentialsUpsertion{up}})
			if err != nil {
				return fmt.Errorf("create SCRAM user %s via %s: %w", name, b.Addr(), err)
			}
			for _, r := range res.Results {
				if r.Error != nil {
					return fmt.Errorf("create SCRAM user %s: %w", r.User, r.Error)
				}
			}
		}
	}
	return nil
}

// mechanisms returns one SASL mechanism per user and kind (nil: no SASL).
func (b *Broker) mechanisms(tb testing.TB) []sasl.Mechanism {
	tb.Helper()
	users := b.cfg.secure.users
	if users == nil {
		return []sasl.Mechanism{nil}
	}
	var out []sasl.Mechanism
	for name, pw := range users {
		out = append(out, plainMechanism(name, pw))
		for _, algo := range []scram.Algorithm{scram.SHA256, scram.SHA512} {
			m, err := scram.Mechanism(algo, name, pw)
			if err != nil {
				tb.Fatalf("testkafka: SCRAM client for %s: %v", name, err)
			}
			out = append(out, m)
		}
	}
	return out
}

// waitSecure retries a metadata request on the SECURE listener with mech
// (and TLS when configured) until it succeeds or ctx ends.
func (b *Broker) waitSecure(ctx context.Context, mech sasl.Mechanism) error {
	tr := &kafka.Transport{DialTimeout: 5 * time.Second, SASL: mech, TLS: b.clientTLS()}
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(b.SecureAddr()), Timeout: 5 * time.Second, Transport: tr}
	for {
		_, err := client.Metadata(ctx, &kafka.MetadataRequest{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// clientTLS returns a client TLS configuration trusting the test CA, or nil.
func (b *Broker) clientTLS() *tls.Config {
	f := b.cfg.secure.tls
	if f == nil {
		return nil
	}
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(f.CA); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
