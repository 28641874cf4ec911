package config

import "github.com/spf13/pflag"

// Flags holds the configuration flags registered on a FlagSet by Register.
// Read them with Load after the FlagSet has been parsed.
type Flags struct {
	fs         *pflag.FlagSet
	configFile *string
	sets       *[]string
}

// flagKey maps a convenience flag to its configuration key.
type flagKey struct {
	name, key, usage string
}

// convenienceFlags lists the shorthand flags for the most used keys.
func convenienceFlags() []flagKey {
	return []flagKey{
		{"brokers", "kafka.brokers", "Kafka brokers `host:port,...` (kafka.brokers; with redis.addrs also unset: embedded mode)"},
		{"redis-addrs", "redis.addrs", "Redis addresses `host:port,...` (redis.addrs)"},
		{"redis-mode", "redis.mode", "Redis `mode`: standalone, cluster or sentinel (redis.mode)"},
		{"group-id", "kafka.group_id", "Kafka consumer `group` (kafka.group_id)"},
		{"topics", "kafka.topics", "input topics `topic,...` (kafka.topics)"},
		{"dlq-topic", "kafka.dlq_topic", "dead-letter `topic` (kafka.dlq_topic)"},
		{"http-addr", "http.addr", "listen `address` of /metrics, /healthz, /readyz (http.addr)"},
		{"log-level", "log.level", "log `level`: debug, info, warn or error (log.level)"},
		{"key-prefix", "redis.key_prefix", "`prefix` of every Redis key, without { or } (redis.key_prefix)"},
	}
}

// Register adds the configuration flags to fs and returns the handle Load
// reads them from: --config FILE (YAML; no file is read unless named),
// --set key=value (repeatable; any key, highest precedence) and the
// convenience flags --brokers, --redis-addrs, --redis-mode, --group-id,
// --topics, --dlq-topic, --http-addr, --log-level and --key-prefix. A
// convenience flag counts only when given on the command line; list values
// are comma-separated. Commands add their own flags to the same set.
// Register panics (as pflag does) if fs already defines one of these names.
func Register(fs *pflag.FlagSet) *Flags {
	fl := &Flags{fs: fs}
	fl.configFile = fs.String("config", "", "YAML configuration `file` (none is read unless named; see configs/consumer.yaml)")
	fl.sets = fs.StringArray("set", nil, "set a configuration key, `key=value` (repeatable; lists comma-separated; overrides every other source)")
	for _, c := range convenienceFlags() {
		fs.String(c.name, "", c.usage)
	}
	return fl
}

// ConfigFile returns the value of --config (empty when no file was named).
func (fl *Flags) ConfigFile() string {
	if fl == nil || fl.configFile == nil {
		return ""
	}
	return *fl.configFile
}
