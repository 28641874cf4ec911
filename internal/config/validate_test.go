package config

import (
	"strings"
	"testing"
)

func TestInvalid(t *testing.T) {
	type row struct {
		name    string
		file    string
		env     []string
		args    []string
		key     string
		wantErr string // exact message when not empty, else a substring check on wantSub
		wantSub string
	}
	set := func(kv ...string) []string {
		var a []string
		for _, s := range kv {
			a = append(a, "--set", s)
		}
		return a
	}
	tests := []row{
		// unknown keys
		{name: "unknown file key", file: "foo:\n  bar: 1\n", key: "foo", wantSub: "unknown key (in "},
		{name: "unknown nested file key", file: "projections:\n  last_viewed:\n    sise: 3\n", key: "projections.last_viewed.sise", wantSub: "unknown key (in "},
		{name: "unknown file key with null value", file: "kafka:\n  grup_id:\n", key: "kafka.grup_id", wantSub: "unknown key"},
		{name: "unknown file key under unknown projection", file: "projections:\n  teleport:\n    enabled: true\n", key: "projections.teleport", wantSub: "unknown key"},
		{name: "upper-case file key", file: "Kafka:\n  group_id: g\n", key: "Kafka", wantSub: "unknown key"},
		{name: "file section is a scalar", file: "kafka: 5\n", key: "kafka", wantSub: "must be a mapping"},
		{name: "unknown env", env: []string{"PROJECTOR_FOO=1"}, key: "PROJECTOR_FOO", wantErr: "config: PROJECTOR_FOO: unknown environment variable"},
		{name: "env of a section", env: []string{"PROJECTOR_KAFKA=1"}, key: "PROJECTOR_KAFKA", wantSub: "unknown environment variable"},
		{name: "unknown set key", args: set("foo.bar=1"), key: "foo.bar", wantErr: "config: foo.bar: unknown key (in --set)"},
		{name: "set of a section", args: set("kafka=1"), key: "kafka", wantSub: "group of keys"},
		{name: "set without =", args: set("kafka.group_id"), key: "--set", wantSub: "key=value"},
		{name: "set with empty key", args: set("=x"), key: "--set", wantSub: "key=value"},

		// sizes and integers
		{name: "last_viewed size 0", args: set("projections.last_viewed.size=0"), key: "projections.last_viewed.size", wantErr: "config: projections.last_viewed.size: must be at least 1 (got 0)"},
		{name: "history size negative env", env: []string{"PROJECTOR_PROJECTIONS_HISTORY_SIZE=-1"}, key: "projections.history.size", wantSub: "at least 1"},
		{name: "size not an integer in file", file: "projections:\n  history:\n    size: 1.5\n", key: "projections.history.size", wantSub: "must be an integer (got 1.5)"},
		{name: "size not an integer in env", env: []string{"PROJECTOR_PROJECTIONS_LAST_VIEWED_SIZE=ten"}, key: "projections.last_viewed.size", wantSub: `must be an integer (got "ten")`},
		{name: "max_record_bytes 0", args: set("kafka.max_record_bytes=0"), key: "kafka.max_record_bytes", wantSub: "at least 1"},
		{name: "max_record_bytes float string", args: set("kafka.max_record_bytes=1e6"), key: "kafka.max_record_bytes", wantSub: "integer"},
		{name: "max_events 0", file: "batch:\n  max_events: 0\n", key: "batch.max_events", wantSub: "at least 1"},
		{name: "bool not a bool", env: []string{"PROJECTOR_PROJECTIONS_TRENDING_ENABLED=maybe"}, key: "projections.trending.enabled", wantSub: "true or false"},
		{name: "bool as a number in file", file: "projections:\n  orders:\n    enabled: 1\n", key: "projections.orders.enabled", wantSub: "true or false"},
		{name: "string given a list", file: "kafka:\n  group_id: [a, b]\n", key: "kafka.group_id", wantSub: "single value"},
		{name: "list given a mapping", file: "kafka:\n  topics:\n    a: 1\n", key: "kafka.topics", wantSub: "must be a list"},
		{name: "list of lists", file: "kafka:\n  topics: [[a]]\n", key: "kafka.topics", wantSub: "list of strings"},
		{name: "duration as a number in file", file: "idempotency:\n  window: 60\n", key: "idempotency.window", wantSub: "duration"},

		// granularities and scope
		{name: "unknown granularity", args: set("projections.stats.granularities=day,week"), key: "projections.stats.granularities", wantSub: `unknown granularity "week"`},
		{name: "duplicate granularity", file: "projections:\n  stats:\n    granularities: [day, hour, day]\n", key: "projections.stats.granularities", wantSub: `duplicate granularity "day"`},
		{name: "empty granularities while enabled", file: "projections:\n  stats:\n    granularities: []\n", key: "projections.stats.granularities", wantSub: "must not be empty"},
		{name: "scope one value", args: set("projections.history.scope=device"), key: "projections.history.scope", wantSub: "[device, store]"},
		{name: "scope unknown value", file: "projections:\n  history:\n    scope: [device, shop]\n", key: "projections.history.scope", wantSub: "[device, store]"},
		{name: "scope duplicate", args: set("projections.history.scope=device,device"), key: "projections.history.scope", wantSub: "[device, store]"},
		{name: "scope three values", args: set("projections.history.scope=device,store,device"), key: "projections.history.scope", wantSub: "[device, store]"},

		// time zone
		{name: "unknown time zone", args: set("time_zone=Mars/Base"), key: "time_zone", wantErr: `config: time_zone: unknown time zone "Mars/Base"`},
		{name: "empty time zone", env: []string{"PROJECTOR_TIME_ZONE="}, key: "time_zone", wantSub: "IANA"},
		{name: "local time zone", file: "time_zone: Local\n", key: "time_zone", wantSub: "Local"},

		// redis
		{name: "unknown redis mode", env: []string{"PROJECTOR_REDIS_MODE=replicated"}, key: "redis.mode", wantSub: "standalone, cluster or sentinel"},
		{name: "cluster in embedded mode", args: []string{"--redis-mode", "cluster"}, key: "redis.mode", wantSub: "redis.addrs"},
		{name: "sentinel in embedded mode", env: []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_SENTINEL_MASTER_NAME=m"}, key: "redis.mode", wantSub: "sentinel needs redis.addrs"},
		{name: "sentinel without master name", env: []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=s1:26379,s2:26379"},
			key: "redis.sentinel.master_name", wantErr: "config: redis.sentinel.master_name: must be set when redis.mode is sentinel (the name the Sentinels of redis.addrs monitor)"},
		{name: "sentinel master name with a space", env: []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=s1:26379", "PROJECTOR_REDIS_SENTINEL_MASTER_NAME=my master"},
			key: "redis.sentinel.master_name", wantSub: "spaces"},
		{name: "sentinel key in standalone mode", args: set("redis.addrs=r:6379", "redis.sentinel.master_name=m"), key: "redis.sentinel.master_name", wantSub: "not sentinel"},
		{name: "sentinel password in cluster mode", env: []string{"PROJECTOR_REDIS_MODE=cluster", "PROJECTOR_REDIS_ADDRS=a:1,b:2", "PROJECTOR_REDIS_SENTINEL_PASSWORD=x"},
			key: "redis.sentinel.password", wantSub: "redis.mode is cluster, not sentinel"},
		{name: "sentinel bad address", env: []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=s1", "PROJECTOR_REDIS_SENTINEL_MASTER_NAME=m"}, key: "redis.addrs", wantSub: "host:port"},
		{name: "read from replicas standalone", env: []string{"PROJECTOR_REDIS_ADDRS=r:6379", "PROJECTOR_REDIS_READ_FROM=replicas"},
			key: "redis.read_from", wantErr: "config: redis.read_from: replicas needs redis.mode sentinel or cluster (a standalone address names one server)"},
		{name: "read from unknown", args: set("redis.addrs=r:6379", "redis.read_from=nearest"), key: "redis.read_from", wantSub: "master or replicas"},
		{name: "standalone with two addrs", args: []string{"--redis-addrs", "a:1,b:2"}, key: "redis.addrs", wantSub: "one address"},
		{name: "key prefix with brace", args: []string{"--key-prefix", "shop{"}, key: "redis.key_prefix", wantSub: "{ or }"},
		{name: "key prefix with closing brace", file: "redis:\n  key_prefix: \"a}\"\n", key: "redis.key_prefix", wantSub: "{ or }"},
		{name: "empty addr element", env: []string{"PROJECTOR_REDIS_ADDRS=,a:1"}, key: "redis.addrs", wantSub: "empty address"},
		{name: "allow_eviction not a bool", env: []string{"PROJECTOR_REDIS_ALLOW_EVICTION=yes"}, key: "redis.allow_eviction", wantSub: "true or false"},
		{name: "allow_eviction a string in file", file: "redis:\n  allow_eviction: \"sometimes\"\n", key: "redis.allow_eviction", wantSub: "true or false"},
		{name: "empty addrs list", env: []string{"PROJECTOR_REDIS_ADDRS="}, key: "redis.addrs", wantSub: "must not be empty"},

		// kafka
		{name: "empty broker element", env: []string{"PROJECTOR_KAFKA_BROKERS=a:1,,b:2"}, key: "kafka.brokers", wantSub: "empty address"},
		{name: "empty broker in file", file: "kafka:\n  brokers: [a:1, \"\"]\n", key: "kafka.brokers", wantSub: "empty address"},
		{name: "empty brokers list", args: []string{"--brokers", ""}, key: "kafka.brokers", wantSub: "must not be empty"},
		{name: "broker without port", args: []string{"--brokers", "kafka1"}, key: "kafka.brokers", wantSub: "host:port"},
		{name: "broker bad port", args: []string{"--brokers", "kafka1:http"}, key: "kafka.brokers", wantSub: "invalid port"},
		{name: "empty group", args: []string{"--group-id", ""}, key: "kafka.group_id", wantSub: "must not be empty"},
		{name: "empty topic list", env: []string{"PROJECTOR_KAFKA_TOPICS="}, key: "kafka.topics", wantSub: "at least one topic"},
		{name: "empty topic name", args: []string{"--topics", "a,,b"}, key: "kafka.topics", wantSub: "empty topic name"},
		{name: "duplicate topic", args: []string{"--topics", "a,b,a"}, key: "kafka.topics", wantSub: `duplicate topic "a"`},
		{name: "illegal topic name", args: []string{"--topics", "a b"}, key: "kafka.topics", wantSub: "letters, digits"},
		{name: "dlq is an input topic", args: []string{"--dlq-topic", "shop.clicks"}, key: "kafka.dlq_topic", wantSub: "input topic"},
		{name: "empty dlq topic", args: []string{"--dlq-topic", ""}, key: "kafka.dlq_topic", wantSub: "empty"},

		// http and log
		{name: "bad http addr", args: []string{"--http-addr", "9090"}, key: "http.addr", wantSub: "host:port"},
		{name: "unknown log level", args: []string{"--log-level", "verbose"}, key: "log.level", wantSub: "debug, info, warn or error"},
		{name: "unknown log format", env: []string{"PROJECTOR_LOG_FORMAT=text"}, key: "log.format", wantSub: "auto, json or console"},
	}
	// Every duration key rejects zero and below.
	for _, f := range newSchema().fields {
		if f.kind == kindDuration {
			tests = append(tests,
				row{name: f.key + " zero", args: set(f.key + "=0s"), key: f.key, wantSub: "must be greater than zero (got 0s)"},
				row{name: f.key + " zero days", env: []string{envName(f.key) + "=0d"}, key: f.key, wantSub: "greater than zero"},
				row{name: f.key + " negative", args: set(f.key + "=-1h"), key: f.key, wantSub: "greater than zero"},
			)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadWith(t, tt.file, tt.env, tt.args...)
			assertKeyError(t, err, tt.key)
			if tt.wantErr != "" && err.Error() != tt.wantErr {
				t.Fatalf("error %q, want %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantSub) {
				t.Fatalf("error %q does not contain %q", err, tt.wantSub)
			}
		})
	}
}

func TestUnknownFileKeyNamesFile(t *testing.T) {
	path := writeFile(t, "foo:\n  bar: 1\nkafka:\n  group_id: g\n")
	_, err := loadWith(t, "", nil, "--config", path)
	assertKeyError(t, err, "foo")
	if want := "config: foo: unknown key (in " + path + ")"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	path = writeFile(t, "kafka:\n  foo:\n    bar: 1\n")
	_, err = loadWith(t, "", nil, "--config", path)
	assertKeyError(t, err, "kafka.foo")
}
