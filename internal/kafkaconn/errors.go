package kafkaconn

import (
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// SetupError explains a Permanent error in one line naming the keys to
// check (never their values).
func SetupError(err error) error {
	switch {
	case errors.Is(err, kafka.SASLAuthenticationFailed):
		return fmt.Errorf("kafka refused the SASL credentials (check kafka.sasl.username and kafka.sasl.password, PROJECTOR_KAFKA_SASL_PASSWORD or kafka.sasl.password_file): %w", err)
	case errors.Is(err, kafka.UnsupportedSASLMechanism), errors.Is(err, kafka.IllegalSASLState):
		return fmt.Errorf("kafka does not accept kafka.sasl.mechanism on this listener: %w", err)
	}
	return fmt.Errorf("kafka TLS handshake failed (check kafka.tls.* and that the brokers' address is their TLS listener): %w", err)
}
