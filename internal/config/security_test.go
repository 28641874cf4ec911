package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"projector/internal/testing/testtls"
)

const secret = "s3cr3t-Pa55"

// secretFile writes content to a new file and returns its path.
func secretFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPasswordSources(t *testing.T) {
	c := mustLoad(t, "", []string{"PROJECTOR_REDIS_ADDRS=r:6379", "PROJECTOR_REDIS_USERNAME=app", "PROJECTOR_REDIS_PASSWORD=" + secret})
	if c.Redis.Username != "app" || c.Redis.Password != secret {
		t.Fatalf("from the environment: user %q password %q", c.Redis.Username, c.Redis.Password)
	}
	file := secretFile(t, "pw", secret+"\n")
	c = mustLoad(t, "", []string{"PROJECTOR_REDIS_ADDRS=r:6379", "PROJECTOR_REDIS_PASSWORD_FILE=" + file,
		"PROJECTOR_KAFKA_SASL_MECHANISM=scram-sha-512", "PROJECTOR_KAFKA_SASL_USERNAME=k", "PROJECTOR_KAFKA_SASL_PASSWORD_FILE=" + file})
	if c.Redis.Password != secret || c.Kafka.SASL.Password != secret {
		t.Fatalf("from files: redis %q kafka %q, want %q without the newline", c.Redis.Password, c.Kafka.SASL.Password, secret)
	}
}

func TestSecurityErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	empty := secretFile(t, "empty", "\n")
	cert := testtls.New(t).ClientCert
	notPEM := secretFile(t, "ca.txt", "not a certificate "+secret)
	tests := []struct {
		name string
		env  []string
		key  string
	}{
		{"both passwords", []string{"PROJECTOR_REDIS_PASSWORD=" + secret, "PROJECTOR_REDIS_PASSWORD_FILE=" + empty}, "redis.password_file"},
		{"unreadable password file", []string{"PROJECTOR_REDIS_PASSWORD_FILE=" + missing}, "redis.password_file"},
		{"empty password file", []string{"PROJECTOR_REDIS_PASSWORD_FILE=" + empty}, "redis.password_file"},
		{"user without password", []string{"PROJECTOR_REDIS_USERNAME=app"}, "redis.password"},
		{"both sentinel passwords", []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=s:26379", "PROJECTOR_REDIS_SENTINEL_MASTER_NAME=m", "PROJECTOR_REDIS_SENTINEL_PASSWORD=" + secret, "PROJECTOR_REDIS_SENTINEL_PASSWORD_FILE=" + empty}, "redis.sentinel.password_file"},
		{"unreadable sentinel password file", []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=s:26379", "PROJECTOR_REDIS_SENTINEL_MASTER_NAME=m", "PROJECTOR_REDIS_SENTINEL_PASSWORD_FILE=" + missing}, "redis.sentinel.password_file"},
		{"sentinel user without password", []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=s:26379", "PROJECTOR_REDIS_SENTINEL_MASTER_NAME=m", "PROJECTOR_REDIS_SENTINEL_USERNAME=watcher"}, "redis.sentinel.password"},
		{"ca without tls", []string{"PROJECTOR_REDIS_TLS_CA_FILE=" + cert}, "redis.tls.ca_file"},
		{"unreadable ca", []string{"PROJECTOR_REDIS_TLS_ENABLED=true", "PROJECTOR_REDIS_TLS_CA_FILE=" + missing}, "redis.tls.ca_file"},
		{"ca not PEM", []string{"PROJECTOR_KAFKA_TLS_ENABLED=true", "PROJECTOR_KAFKA_TLS_CA_FILE=" + notPEM}, "kafka.tls.ca_file"},
		{"cert without key", []string{"PROJECTOR_REDIS_TLS_ENABLED=true", "PROJECTOR_REDIS_TLS_CERT_FILE=" + cert}, "redis.tls.cert_file"},
		{"unreadable key", []string{"PROJECTOR_KAFKA_TLS_ENABLED=true", "PROJECTOR_KAFKA_TLS_CERT_FILE=" + cert, "PROJECTOR_KAFKA_TLS_KEY_FILE=" + missing}, "kafka.tls.key_file"},
		{"key mismatch", []string{"PROJECTOR_KAFKA_TLS_ENABLED=true", "PROJECTOR_KAFKA_TLS_CERT_FILE=" + cert, "PROJECTOR_KAFKA_TLS_KEY_FILE=" + notPEM}, "kafka.tls.cert_file"},
		{"unknown mechanism", []string{"PROJECTOR_KAFKA_SASL_MECHANISM=gssapi"}, "kafka.sasl.mechanism"},
		{"password without mechanism", []string{"PROJECTOR_KAFKA_SASL_PASSWORD=" + secret}, "kafka.sasl.mechanism"},
		{"mechanism without user", []string{"PROJECTOR_KAFKA_SASL_MECHANISM=plain"}, "kafka.sasl.username"},
		{"mechanism without password", []string{"PROJECTOR_KAFKA_SASL_MECHANISM=plain", "PROJECTOR_KAFKA_SASL_USERNAME=u"}, "kafka.sasl.password"},
		{"both sasl passwords", []string{"PROJECTOR_KAFKA_SASL_MECHANISM=plain", "PROJECTOR_KAFKA_SASL_USERNAME=u",
			"PROJECTOR_KAFKA_SASL_PASSWORD=" + secret, "PROJECTOR_KAFKA_SASL_PASSWORD_FILE=" + empty}, "kafka.sasl.password_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadWith(t, "", append([]string{"PROJECTOR_REDIS_ADDRS=r:6379"}, tt.env...))
			assertKeyError(t, err, tt.key)
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error quotes the secret: %v", err)
			}
		})
	}
}

func TestTLSClientConfig(t *testing.T) {
	f := testtls.New(t)
	c := mustLoad(t, "", []string{"PROJECTOR_REDIS_ADDRS=r:6379", "PROJECTOR_REDIS_TLS_ENABLED=true",
		"PROJECTOR_REDIS_TLS_CA_FILE=" + f.CA, "PROJECTOR_REDIS_TLS_CERT_FILE=" + f.ClientCert, "PROJECTOR_REDIS_TLS_KEY_FILE=" + f.ClientKey,
		"PROJECTOR_REDIS_TLS_SERVER_NAME=redis.internal"})
	tc := c.Redis.TLS.Client
	if tc == nil || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.ServerName != "redis.internal" || tc.InsecureSkipVerify {
		t.Fatalf("redis TLS client config not built from the keys: %+v", tc)
	}
	if c.Kafka.TLS.Client != nil {
		t.Fatal("kafka TLS client config built although kafka.tls.enabled is false")
	}
}

// TestSentinelKeys: sentinel mode takes the Sentinels in redis.addrs, the
// master name and the Sentinels' own credentials (the password from its
// file), apart from the data nodes' credentials; read_from replicas is
// accepted in sentinel and cluster modes.
func TestSentinelKeys(t *testing.T) {
	file := secretFile(t, "sentinel-pw", secret+"\n")
	c := mustLoad(t, "", []string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=s1:26379,s2:26379,s3:26379",
		"PROJECTOR_REDIS_SENTINEL_MASTER_NAME=shop", "PROJECTOR_REDIS_SENTINEL_USERNAME=watcher",
		"PROJECTOR_REDIS_SENTINEL_PASSWORD_FILE=" + file, "PROJECTOR_REDIS_PASSWORD=data-pw", "PROJECTOR_REDIS_READ_FROM=replicas"})
	r := c.Redis
	if r.Mode != ModeSentinel || len(r.Addrs) != 3 || r.Sentinel.MasterName != "shop" || r.Sentinel.Username != "watcher" ||
		r.Sentinel.Password != secret || r.Password != "data-pw" || r.ReadFrom != ReadFromReplicas {
		t.Fatalf("sentinel keys not loaded: %+v", r)
	}
	c = mustLoad(t, "redis:\n  mode: cluster\n  addrs: [a:1, b:2]\n  read_from: replicas\n", nil)
	if c.Redis.ReadFrom != ReadFromReplicas {
		t.Fatalf("cluster read_from = %q, want replicas", c.Redis.ReadFrom)
	}
}
