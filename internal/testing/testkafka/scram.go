package testkafka

import (
	"crypto/pbkdf2"
	"hash"

	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
)

// saltedPassword is SCRAM's SaltedPassword: PBKDF2 with HMAC of h over the
// password, as long as h's digest.
func saltedPassword(h func() hash.Hash, password string, salt []byte) ([]byte, error) {
	return pbkdf2.Key(h, password, salt, scramIterations, h().Size())
}

// plainMechanism returns SASL/PLAIN for user and password.
func plainMechanism(user, password string) sasl.Mechanism {
	return plain.Mechanism{Username: user, Password: password}
}
