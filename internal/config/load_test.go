package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"projector/pkg/projections"
)

const exampleFile = "../../configs/consumer.yaml"

func TestDefaults(t *testing.T) {
	c := mustLoad(t, "", nil)
	if !reflect.DeepEqual(c, Defaults()) {
		t.Fatalf("no sources:\n got %+v\nwant %+v", c, Defaults())
	}
	// The contract's values, independently of Defaults().
	tests := []struct {
		key  string
		want any
	}{
		{"kafka.brokers", []string(nil)},
		{"kafka.group_id", "projector"},
		{"kafka.topics", []string{"shop.views", "shop.clicks", "shop.orders"}},
		{"kafka.dlq_topic", "shop.dlq"},
		{"kafka.max_record_bytes", 1048576},
		{"kafka.sasl.mechanism", ""},
		{"kafka.sasl.username", ""},
		{"kafka.sasl.password", ""},
		{"kafka.sasl.password_file", ""},
		{"kafka.tls.enabled", false},
		{"kafka.tls.ca_file", ""},
		{"kafka.tls.cert_file", ""},
		{"kafka.tls.key_file", ""},
		{"kafka.tls.server_name", ""},
		{"kafka.tls.insecure_skip_verify", false},
		{"redis.mode", "standalone"},
		{"redis.addrs", []string(nil)},
		{"redis.sentinel.master_name", ""},
		{"redis.sentinel.username", ""},
		{"redis.sentinel.password", ""},
		{"redis.sentinel.password_file", ""},
		{"redis.read_from", "master"},
		{"redis.key_prefix", ""},
		{"redis.username", ""},
		{"redis.password", ""},
		{"redis.password_file", ""},
		{"redis.allow_eviction", false},
		{"redis.tls.enabled", false},
		{"redis.tls.ca_file", ""},
		{"redis.tls.cert_file", ""},
		{"redis.tls.key_file", ""},
		{"redis.tls.server_name", ""},
		{"redis.tls.insecure_skip_verify", false},
		{"redis.wait.replicas", 0},
		{"redis.wait.aof", false},
		{"redis.wait.timeout", time.Second},
		{"time_zone", "UTC"},
		{"idempotency.window", 24 * time.Hour},
		{"batch.max_events", 20000},
		{"batch.max_wait", 10 * time.Millisecond},
		{"http.addr", ":9090"},
		{"log.level", "info"},
		{"log.format", "auto"},
		{"projections.last_viewed.enabled", true},
		{"projections.last_viewed.size", 10},
		{"projections.last_viewed.ttl", 90 * projections.Day},
		{"projections.history.enabled", true},
		{"projections.history.size", 100},
		{"projections.history.retention", 30 * projections.Day},
		{"projections.history.scope", []string(nil)},
		{"projections.stats.enabled", true},
		{"projections.stats.granularities", []string{"year", "month", "day", "hour"}},
		{"projections.stats.day_ttl", 400 * projections.Day},
		{"projections.stats.hour_ttl", 8 * projections.Day},
		{"projections.bestsellers.enabled", true},
		{"projections.bestsellers.retention", 8 * projections.Day},
		{"projections.product_views.enabled", true},
		{"projections.product_views.retention", 8 * projections.Day},
		{"projections.recent_orders.enabled", true},
		{"projections.recent_orders.keep", time.Hour},
		{"projections.orders.enabled", true},
		{"projections.orders.ttl", 90 * projections.Day},
		{"projections.trending.enabled", true},
		{"projections.trending.retention", 2 * time.Hour},
	}
	if len(tests) != len(newSchema().fields) {
		t.Fatalf("table has %d keys, schema %d: keep them in step", len(tests), len(newSchema().fields))
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := keyValue(t, c, tt.key); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%s = %#v, want %#v", tt.key, got, tt.want)
			}
		})
	}
	if !c.Embedded {
		t.Fatal("Embedded = false with nothing configured")
	}
	if c.Location != time.UTC {
		t.Fatalf("Location = %v, want UTC", c.Location)
	}
}

func TestLoadWithoutFlags(t *testing.T) {
	c, err := Load(nil, []string{"PROJECTOR_KAFKA_GROUP_ID=g", "PATH=/bin", "OTHER_PROJECTOR_X=1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.GroupID != "g" {
		t.Fatalf("group = %q, want g", c.Kafka.GroupID)
	}
}

func TestLoadBeforeParse(t *testing.T) {
	fl := Register(pflag.NewFlagSet("test", pflag.ContinueOnError))
	_, err := Load(fl, nil)
	if err == nil {
		t.Fatal("Load before Parse succeeded")
	}
	if got := ExitCode(err); got != 1 {
		t.Fatalf("ExitCode = %d, want 1", got)
	}
}

func TestExampleFileEqualsDefaults(t *testing.T) {
	none := mustLoad(t, "", nil)
	withFile, err := loadWith(t, "", nil, "--config", exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(withFile, none) {
		t.Fatalf("configs/consumer.yaml drifts from the defaults:\nfile %+v\nnone %+v", withFile, none)
	}
}

// TestExampleFileNamesEveryKey: every key is in the example, brokers and addrs
// commented out, and every key has a comment on its line or just above.
func TestExampleFileNamesEveryKey(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range newSchema().fields {
		t.Run(f.key, func(t *testing.T) {
			last := f.key[strings.LastIndex(f.key, ".")+1:]
			if f.key == keyBrokers || f.key == keyRedisAddrs {
				if !strings.Contains(text, "# "+last+":") {
					t.Fatalf("%s is not shown commented out", f.key)
				}
				if _, ok := lookup(m, f.key); ok {
					t.Fatalf("%s is set: the example would not mean embedded mode", f.key)
				}
				return
			}
			if _, ok := lookup(m, f.key); !ok {
				t.Fatalf("%s is missing from the example", f.key)
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), last+":") && !strings.Contains(line, " # ") {
					t.Fatalf("line %q has no comment", line)
				}
			}
		})
	}
}

// lookup finds a dotted key in a parsed YAML mapping.
func lookup(m map[string]any, key string) (any, bool) {
	parts := strings.Split(key, ".")
	var cur any = m
	for _, p := range parts {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func TestExampleFileUncommented(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		uncomment   string
		wantBrokers []string
		wantAddrs   []string
	}{
		{"brokers", "# brokers:", []string{"127.0.0.1:9092"}, []string{DefaultRedisAddr}},
		{"addrs", "# addrs:", []string{DefaultKafkaAddr}, []string{"127.0.0.1:6379"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(string(data), tt.uncomment, strings.TrimPrefix(tt.uncomment, "# "), 1)
			c := mustLoad(t, text, nil)
			if c.Embedded || !reflect.DeepEqual(c.Kafka.Brokers, tt.wantBrokers) || !reflect.DeepEqual(c.Redis.Addrs, tt.wantAddrs) {
				t.Fatalf("embedded=%v brokers=%q addrs=%q", c.Embedded, c.Kafka.Brokers, c.Redis.Addrs)
			}
		})
	}
}

func TestPrecedence(t *testing.T) {
	const (
		scalarFile = "kafka:\n  group_id: g-file\n"
		listFile   = "kafka:\n  brokers: [f:1]\n"
		projFile   = "projections:\n  last_viewed:\n    size: 20\n    ttl: 7d\n"
	)
	tests := []struct {
		name string
		file string
		env  []string
		args []string
		key  string
		want any
	}{
		{"scalar default", "", nil, nil, "kafka.group_id", "projector"},
		{"scalar file", scalarFile, nil, nil, "kafka.group_id", "g-file"},
		{"scalar env over file", scalarFile, []string{"PROJECTOR_KAFKA_GROUP_ID=g-env"}, nil, "kafka.group_id", "g-env"},
		{"scalar flag over env", scalarFile, []string{"PROJECTOR_KAFKA_GROUP_ID=g-env"}, []string{"--group-id", "g-flag"}, "kafka.group_id", "g-flag"},
		{"scalar set over flag", scalarFile, []string{"PROJECTOR_KAFKA_GROUP_ID=g-env"}, []string{"--set", "kafka.group_id=g-set", "--group-id", "g-flag"}, "kafka.group_id", "g-set"},
		{"scalar last set wins", "", nil, []string{"--set", "kafka.group_id=a", "--set", "kafka.group_id=b"}, "kafka.group_id", "b"},
		{"first env entry wins", "", []string{"PROJECTOR_KAFKA_GROUP_ID=first", "PROJECTOR_KAFKA_GROUP_ID=second"}, nil, "kafka.group_id", "first"},
		{"list file", listFile, nil, nil, "kafka.brokers", []string{"f:1"}},
		{"list env over file", listFile, []string{"PROJECTOR_KAFKA_BROKERS=a:1,b:2"}, nil, "kafka.brokers", []string{"a:1", "b:2"}},
		{"list env trimmed", "", []string{"PROJECTOR_KAFKA_BROKERS= a:1 , b:2 "}, nil, "kafka.brokers", []string{"a:1", "b:2"}},
		{"list flag over env", listFile, []string{"PROJECTOR_KAFKA_BROKERS=a:1,b:2"}, []string{"--brokers", "c:3,d:4"}, "kafka.brokers", []string{"c:3", "d:4"}},
		{"list set over flag", listFile, nil, []string{"--brokers", "c:3", "--set", "kafka.brokers=e:5"}, "kafka.brokers", []string{"e:5"}},
		{"list file comma string", "kafka:\n  topics: \"x, y\"\n", nil, nil, "kafka.topics", []string{"x", "y"}},
		{"list topics flag", "", nil, []string{"--topics", "t1,t2"}, "kafka.topics", []string{"t1", "t2"}},
		{"projection file", projFile, nil, nil, "projections.last_viewed.size", 20},
		{"projection env over file", projFile, []string{"PROJECTOR_PROJECTIONS_LAST_VIEWED_SIZE=30"}, nil, "projections.last_viewed.size", 30},
		{"projection set over env", projFile, []string{"PROJECTOR_PROJECTIONS_LAST_VIEWED_SIZE=30"}, []string{"--set", "projections.last_viewed.size=40"}, "projections.last_viewed.size", 40},
		{"projection file keeps other defaults", projFile, nil, nil, "projections.last_viewed.enabled", true},
		{"projection duration file", projFile, nil, nil, "projections.last_viewed.ttl", 7 * projections.Day},
		{"projection duration env", projFile, []string{"PROJECTOR_PROJECTIONS_LAST_VIEWED_TTL=2h"}, nil, "projections.last_viewed.ttl", 2 * time.Hour},
		{"projection bool env", "", []string{"PROJECTOR_PROJECTIONS_TRENDING_ENABLED=false"}, nil, "projections.trending.enabled", false},
		{"projection bool set over env", "", []string{"PROJECTOR_PROJECTIONS_TRENDING_ENABLED=false"}, []string{"--set", "projections.trending.enabled=true"}, "projections.trending.enabled", true},
		{"scope file", "projections:\n  history:\n    scope: [device, store]\n", nil, nil, "projections.history.scope", []string{"device", "store"}},
		{"scope env normalised", "", []string{"PROJECTOR_PROJECTIONS_HISTORY_SCOPE=store,device"}, nil, "projections.history.scope", []string{"device", "store"}},
		{"scope set empty over file", "projections:\n  history:\n    scope: [device, store]\n", nil, []string{"--set", "projections.history.scope="}, "projections.history.scope", []string(nil)},
		{"granularities env", "", []string{"PROJECTOR_PROJECTIONS_STATS_GRANULARITIES=day,hour"}, nil, "projections.stats.granularities", []string{"day", "hour"}},
		{"granularities empty when disabled", "", nil, []string{"--set", "projections.stats.enabled=false", "--set", "projections.stats.granularities="}, "projections.stats.granularities", []string(nil)},
		{"null value keeps default", "kafka:\n  group_id:\n", nil, nil, "kafka.group_id", "projector"},
		{"redis mode flag", "", nil, []string{"--redis-mode", "cluster", "--redis-addrs", "r1:7000,r2:7001"}, "redis.mode", "cluster"},
		{"redis addrs flag", "", nil, []string{"--redis-mode", "cluster", "--redis-addrs", "r1:7000,r2:7001"}, "redis.addrs", []string{"r1:7000", "r2:7001"}},
		{"dlq flag", "", nil, []string{"--dlq-topic", "dead"}, "kafka.dlq_topic", "dead"},
		{"http flag", "", nil, []string{"--http-addr", "127.0.0.1:0"}, "http.addr", "127.0.0.1:0"},
		{"log level flag", "", []string{"PROJECTOR_LOG_LEVEL=warn"}, []string{"--log-level", "debug"}, "log.level", "debug"},
		{"key prefix flag", "", nil, []string{"--key-prefix", "shop:"}, "redis.key_prefix", "shop:"},
		{"key prefix env empty", "redis:\n  key_prefix: x\n", []string{"PROJECTOR_REDIS_KEY_PREFIX="}, nil, "redis.key_prefix", ""},
		{"allow eviction env", "", []string{"PROJECTOR_REDIS_ALLOW_EVICTION=true"}, nil, "redis.allow_eviction", true},
		{"allow eviction file", "redis:\n  allow_eviction: true\n", nil, nil, "redis.allow_eviction", true},
		{"time zone env", "", []string{"PROJECTOR_TIME_ZONE=Europe/Berlin"}, nil, "time_zone", "Europe/Berlin"},
		{"int from env", "", []string{"PROJECTOR_KAFKA_MAX_RECORD_BYTES=2048"}, nil, "kafka.max_record_bytes", 2048},
		{"duration days", "", nil, []string{"--set", "idempotency.window=30d"}, "idempotency.window", 720 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.file, tt.env, tt.args...)
			if got := keyValue(t, c, tt.key); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%s = %#v, want %#v", tt.key, got, tt.want)
			}
		})
	}
}

func TestLocation(t *testing.T) {
	c := mustLoad(t, "time_zone: Europe/Berlin\n", nil)
	if c.Location == nil || c.Location.String() != "Europe/Berlin" {
		t.Fatalf("Location = %v, want Europe/Berlin", c.Location)
	}
}

func TestEmbedded(t *testing.T) {
	tests := []struct {
		name         string
		file         string
		env          []string
		args         []string
		wantEmbedded bool
		wantBrokers  []string
		wantAddrs    []string
	}{
		{"nothing", "", nil, nil, true, nil, nil},
		{"null in file", "kafka:\n  brokers:\nredis:\n  addrs:\n", nil, nil, true, nil, nil},
		{"brokers env only", "", []string{"PROJECTOR_KAFKA_BROKERS=k1:9092,k2:9092"}, nil, false, []string{"k1:9092", "k2:9092"}, []string{"127.0.0.1:6379"}},
		{"brokers file only", "kafka:\n  brokers: [k1:9092]\n", nil, nil, false, []string{"k1:9092"}, []string{"127.0.0.1:6379"}},
		{"addrs flag only", "", nil, []string{"--redis-addrs", "r:6380"}, false, []string{"127.0.0.1:9092"}, []string{"r:6380"}},
		{"addrs set only", "", nil, []string{"--set", "redis.addrs=r:6380"}, false, []string{"127.0.0.1:9092"}, []string{"r:6380"}},
		{"both", "", []string{"PROJECTOR_REDIS_ADDRS=r:6380"}, []string{"--brokers", "k:9093"}, false, []string{"k:9093"}, []string{"r:6380"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.file, tt.env, tt.args...)
			if c.Embedded != tt.wantEmbedded {
				t.Fatalf("Embedded = %v, want %v", c.Embedded, tt.wantEmbedded)
			}
			if !reflect.DeepEqual(c.Kafka.Brokers, tt.wantBrokers) {
				t.Fatalf("brokers = %#v, want %#v", c.Kafka.Brokers, tt.wantBrokers)
			}
			if !reflect.DeepEqual(c.Redis.Addrs, tt.wantAddrs) {
				t.Fatalf("addrs = %#v, want %#v", c.Redis.Addrs, tt.wantAddrs)
			}
		})
	}
}

func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		path     string
		wantText string
	}{
		{"missing", dir + "/nope.yaml", "nope.yaml"},
		{"directory", dir, dir},
		{"bad yaml", writeFile(t, "kafka: [\n"), "x.yaml"},
		{"duplicate key", writeFile(t, "kafka:\n  group_id: a\n  group_id: b\n"), "already defined"},
		{"not a mapping", writeFile(t, "- a\n- b\n"), "x.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadWith(t, "", nil, "--config", tt.path)
			assertKeyError(t, err, "--config")
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("error %q does not mention %q", err, tt.wantText)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	parseErr := func(args ...string) error {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		Register(fs)
		return fs.Parse(args)
	}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"help", parseErr("--help"), 0},
		{"key error", &KeyError{Key: "a", Msg: "b"}, 2},
		{"wrapped key error", fmt.Errorf("start: %w", &KeyError{Key: "a", Msg: "b"}), 2},
		{"unknown flag", parseErr("--nope"), 2},
		{"missing value", parseErr("--brokers"), 2},
		{"bad syntax", parseErr("---x"), 2},
		{"other", errors.New("redis down"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Fatalf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestKeyErrorOneLine(t *testing.T) {
	tests := []struct {
		err  *KeyError
		want string
	}{
		{&KeyError{Key: "a.b", Msg: "bad"}, "config: a.b: bad"},
		{&KeyError{Key: "--config", Msg: "x.yaml: yaml: unmarshal errors:\n  line 2: oops\n"}, "config: --config: x.yaml: yaml: unmarshal errors: line 2: oops"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Fatalf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestConfigFileFlag(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fl := Register(fs)
	if err := fs.Parse([]string{"--config", exampleFile}); err != nil {
		t.Fatal(err)
	}
	if fl.ConfigFile() != exampleFile {
		t.Fatalf("ConfigFile() = %q", fl.ConfigFile())
	}
	var nilFlags *Flags
	if nilFlags.ConfigFile() != "" {
		t.Fatal("nil Flags has a config file")
	}
}
