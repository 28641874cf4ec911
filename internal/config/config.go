// Package config loads and validates projector's configuration (docs/contract.md sections 7
// and 8) with viper: defaults, then an optional YAML file, then PROJECTOR_*
// environment variables, then flags.
package config

import (
	"time"

	"projector/pkg/projections"
)

// Config is the whole validated configuration.
type Config struct {
	Kafka       KafkaConfig        `mapstructure:"kafka"`
	Redis       RedisConfig        `mapstructure:"redis"`
	TimeZone    string             `mapstructure:"time_zone"`
	Idempotency IdempotencyConfig  `mapstructure:"idempotency"`
	Batch       BatchConfig        `mapstructure:"batch"`
	HTTP        HTTPConfig         `mapstructure:"http"`
	Log         LogConfig          `mapstructure:"log"`
	Projections projections.Config `mapstructure:"projections"`

	// Location is TimeZone loaded (derived, not a key).
	Location *time.Location `mapstructure:"-"`
	// Embedded is true when neither kafka.brokers nor redis.addrs was configured
	// (derived, not a key): the consumer then runs an in-process broker and Redis.
	Embedded bool `mapstructure:"-"`
}

// KafkaConfig holds the `kafka.` keys.
type KafkaConfig struct {
	Brokers        []string   `mapstructure:"brokers"`
	GroupID        string     `mapstructure:"group_id"`
	Topics         []string   `mapstructure:"topics"`
	DLQTopic       string     `mapstructure:"dlq_topic"`
	MaxRecordBytes int        `mapstructure:"max_record_bytes"`
	SASL           SASLConfig `mapstructure:"sasl"`
	TLS            TLSConfig  `mapstructure:"tls"`
}

// RedisConfig holds the `redis.` keys.
type RedisConfig struct {
	Mode string `mapstructure:"mode"` // standalone, cluster or sentinel
	// Addrs is the server (standalone), the seed nodes (cluster) or the
	// Sentinels (sentinel).
	Addrs []string `mapstructure:"addrs"`
	// Sentinel names the monitored master and the Sentinels' own
	// credentials (sentinel mode only).
	Sentinel SentinelConfig `mapstructure:"sentinel"`
	// ReadFrom is master or replicas: where cmd/api sends its reads
	// (replicas: sentinel and cluster modes only).
	ReadFrom  string `mapstructure:"read_from"`
	KeyPrefix string `mapstructure:"key_prefix"`
	// Username and Password authenticate with AUTH (an ACL user, or only a
	// password for requirepass); PasswordFile is read into Password by Load.
	Username     string `mapstructure:"username"`
	Password     string `mapstructure:"password"`
	PasswordFile string `mapstructure:"password_file"`
	// AllowEviction accepts a server whose maxmemory-policy evicts keys
	// (allkeys-*, volatile-*): start-up warns instead of refusing.
	AllowEviction bool      `mapstructure:"allow_eviction"`
	TLS           TLSConfig `mapstructure:"tls"`
	// Wait is what a batch waits for before its offsets are committed.
	Wait WaitConfig `mapstructure:"wait"`
}

// SentinelConfig holds the `redis.sentinel.` keys: the name of the master
// the Sentinels of redis.addrs monitor, and the credentials of the
// Sentinels themselves when they require AUTH (the data nodes take
// redis.username and redis.password). PasswordFile is read into Password
// by Load.
type SentinelConfig struct {
	MasterName   string `mapstructure:"master_name"`
	Username     string `mapstructure:"username"`
	Password     string `mapstructure:"password"`
	PasswordFile string `mapstructure:"password_file"`
}

// Values of redis.mode and redis.read_from.
const (
	ModeStandalone   = "standalone"
	ModeCluster      = "cluster"
	ModeSentinel     = "sentinel"
	ReadFromMaster   = "master"
	ReadFromReplicas = "replicas"
)

// WaitConfig holds the `redis.wait.` keys: a batch's offsets are committed
// only after its writes reached Replicas replicas (WAIT) and, with AOF, were
// fsynced to the append-only file of the master and of those replicas
// (WAITAOF, Redis 7.2+ and Valkey), on every master. A wait that times out
// is retried; the consumer is not ready meanwhile.
type WaitConfig struct {
	Replicas int           `mapstructure:"replicas"`
	AOF      bool          `mapstructure:"aof"`
	Timeout  time.Duration `mapstructure:"timeout"`
}

// IdempotencyConfig holds the `idempotency.` keys.
type IdempotencyConfig struct {
	Window time.Duration `mapstructure:"window"`
}

// BatchConfig holds the `batch.` keys.
type BatchConfig struct {
	MaxEvents int           `mapstructure:"max_events"`
	MaxWait   time.Duration `mapstructure:"max_wait"`
}

// HTTPConfig holds the `http.` keys.
type HTTPConfig struct {
	Addr string `mapstructure:"addr"`
}

// LogConfig holds the `log.` keys.
type LogConfig struct {
	Level  string `mapstructure:"level"`  // debug, info, warn, error
	Format string `mapstructure:"format"` // auto, json, console
}

// Defaults returns the configuration used when no source sets anything
// (docs/contract.md section 8): embedded mode (no brokers, no Redis addresses), time zone
// UTC and every projection on with projections.Defaults().
// batch.max_events (20000) and batch.max_wait (10ms) are this
// implementation's choice.
func Defaults() Config {
	return Config{
		Kafka: KafkaConfig{
			GroupID:        "projector",
			Topics:         []string{"shop.views", "shop.clicks", "shop.orders"},
			DLQTopic:       "shop.dlq",
			MaxRecordBytes: 1 << 20,
		},
		Redis:       RedisConfig{Mode: ModeStandalone, ReadFrom: ReadFromMaster, Wait: WaitConfig{Timeout: time.Second}},
		TimeZone:    "UTC",
		Idempotency: IdempotencyConfig{Window: 24 * time.Hour},
		Batch:       BatchConfig{MaxEvents: 20000, MaxWait: 10 * time.Millisecond},
		HTTP:        HTTPConfig{Addr: ":9090"},
		Log:         LogConfig{Level: "info", Format: "auto"},
		Projections: projections.Defaults(),
		Location:    time.UTC,
		Embedded:    true,
	}
}
