package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestRunRefusesBadDeploymentFlags: a deployment flag that cannot run stops
// the command with exit 2 and one line naming the flag, before anything starts.
func TestRunRefusesBadDeploymentFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"-aof", "sometimes"}, "-aof"},
		{[]string{"-replicas", "-1"}, "-replicas"},
		{[]string{"-replicas", "1", "-cluster", "3"}, "-replicas"},
		{[]string{"-server", "valkey", "-repo", "/nonexistent"}, "-server"},
	} {
		var out, errOut bytes.Buffer
		t.Setenv("PROJECTOR_VALKEY_SERVER", "")
		t.Setenv("PROJECTOR_TESTENV_DIR", "")
		if code := run(tc.args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], tc.flag) {
			t.Errorf("%v: stderr %q, want one line naming %s", tc.args, errOut.String(), tc.flag)
		}
	}
}

// TestPeerRefusesBadConfiguration: the peer subcommand reads the consumer's
// PROJECTOR_* configuration; a bad value, or no servers at all, stops it
// with exit 2 and one line naming the key.
func TestPeerRefusesBadConfiguration(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"PROJECTOR_KAFKA_BROKERS": "127.0.0.1:1", "PROJECTOR_REDIS_ADDRS": "127.0.0.1:2", "PROJECTOR_BATCH_MAX_EVENTS": "0"}, "batch.max_events"},
		{map[string]string{}, "kafka.brokers"},
	} {
		for _, kv := range os.Environ() {
			if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "PROJECTOR_") {
				t.Setenv(k, v) // restored after the test
				os.Unsetenv(k)
			}
		}
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		var out, errOut bytes.Buffer
		if code := run([]string{"peer"}, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.env, code, errOut.String())
		}
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], tc.name) {
			t.Errorf("%v: stderr %q, want one line naming %s", tc.env, errOut.String(), tc.name)
		}
	}
}
