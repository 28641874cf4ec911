package deploycheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"projector/internal/config"
)

// composeFile is the part of docker-compose.yml the tests look at.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     any               `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Profiles    []string          `yaml:"profiles"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   any               `yaml:"depends_on"`
	Deploy      struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
}

// commandText joins a service's command (string or list) into one string.
func (s composeService) commandText() string {
	switch c := s.Command.(type) {
	case string:
		return c
	case []any:
		parts := make([]string, len(c))
		for i, p := range c {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, " ")
	}
	return ""
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var c composeFile
	readYAML(t, "docker-compose.yml", &c)
	return c
}

func service(t *testing.T, c composeFile, name string) composeService {
	t.Helper()
	s, ok := c.Services[name]
	if !ok {
		t.Fatalf("docker-compose.yml has no service %q (services: %v)", name, slices.Sorted(maps.Keys(c.Services)))
	}
	return s
}

// TestComposeStack checks that the stack holds what the README promises.
func TestComposeStack(t *testing.T) {
	c := loadCompose(t)
	if k := service(t, c, "kafka"); !strings.HasPrefix(k.Image, "apache/kafka:") ||
		!strings.Contains(k.Environment["KAFKA_PROCESS_ROLES"], "controller") {
		t.Errorf("kafka: want the apache/kafka image in KRaft mode (broker,controller), got image %q roles %q",
			k.Image, k.Environment["KAFKA_PROCESS_ROLES"])
	}
	if r := service(t, c, "redis"); !strings.Contains(r.commandText(), "--appendonly yes") {
		t.Errorf("redis: want --appendonly yes, command is %q", r.commandText())
	}
	if n := service(t, c, "consumer").Deploy.Replicas; n != 2 {
		t.Errorf("consumer: deploy.replicas = %d, want 2", n)
	}
	topics := service(t, c, "kafka-topics").commandText()
	for _, want := range []string{"--partitions", "retention.ms=-1", "shop.views", "shop.clicks", "shop.orders", "shop.dlq"} {
		if !strings.Contains(topics, want) {
			t.Errorf("kafka-topics: command lacks %q:\n%s", want, topics)
		}
	}
	if p := service(t, c, "replayer").Profiles; !slices.Contains(p, "replay") {
		t.Errorf("replayer: profiles = %v, want it under the replay profile", p)
	}
	for name, bin := range map[string]string{"api": "/usr/local/bin/api", "replayer": "/usr/local/bin/replayer"} {
		if ep := service(t, c, name).Entrypoint; !slices.Contains(ep, bin) {
			t.Errorf("%s: entrypoint %v, want %s", name, ep, bin)
		}
	}
	mounts := map[string]string{
		"prometheus": "./deploy/prometheus:",
		"grafana":    "./deploy/grafana/projector.json:",
	}
	for name, prefix := range mounts {
		if !slices.ContainsFunc(service(t, c, name).Volumes, func(v string) bool { return strings.HasPrefix(v, prefix) }) {
			t.Errorf("%s: no volume mounting %s", name, strings.TrimSuffix(prefix, ":"))
		}
	}
}

// TestComposeEnvironmentIsValidConfig loads the projector services'
// environment with the real configuration loader: unknown PROJECTOR_*
// names or bad values fail here instead of at container start.
func TestComposeEnvironmentIsValidConfig(t *testing.T) {
	c := loadCompose(t)
	for _, name := range []string{"consumer", "api", "replayer"} {
		env := service(t, c, name).Environment
		if len(env) == 0 {
			t.Errorf("%s: no environment", name)
			continue
		}
		var environ []string
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		cfg, err := config.Load(nil, environ)
		if err != nil {
			t.Errorf("%s: environment is not a valid configuration: %v", name, err)
			continue
		}
		if cfg.Embedded || !slices.Equal(cfg.Kafka.Brokers, []string{"kafka:9092"}) || !slices.Equal(cfg.Redis.Addrs, []string{"redis:6379"}) {
			t.Errorf("%s: want kafka:9092 and redis:6379 (not embedded), got brokers %v redis %v embedded %v",
				name, cfg.Kafka.Brokers, cfg.Redis.Addrs, cfg.Embedded)
		}
	}
}
