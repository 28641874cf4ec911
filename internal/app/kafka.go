package app

import (
	"context"

	"go.uber.org/zap"

	"projector/internal/config"
	"projector/internal/kafkaconn"
)

// connectKafka builds the Kafka connection settings and tries the brokers
// once: refused credentials or a failed TLS handshake stop the start-up
// with one error naming the keys to check; unreachable brokers do not (the
// consumer keeps retrying, as Kafka may start after it).
func connectKafka(ctx context.Context, cfg config.KafkaConfig, log *zap.Logger) (*kafkaconn.Conn, error) {
	kc, err := kafkaconn.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := kc.Check(ctx); err != nil {
		if kafkaconn.Permanent(err) {
			kc.Close()
			return nil, kafkaconn.SetupError(err)
		}
		if ctx.Err() == nil {
			log.Warn("kafka not reachable yet; retrying in the background", zap.Error(err))
		}
	}
	return kc, nil
}
