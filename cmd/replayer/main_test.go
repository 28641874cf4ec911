package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad flags and configuration stop the replayer with exit code 2 and one line naming the key.
func TestBadInvocationExitsTwo(t *testing.T) {
	brokers := []string{"PROJECTOR_KAFKA_BROKERS=127.0.0.1:1", "PROJECTOR_REDIS_ADDRS=127.0.0.1:1"}
	cases := []struct {
		args []string
		env  []string
		key  string
	}{
		{args: []string{"--to", "soon"}, env: brokers, key: "--to"},
		{args: []string{"--wipe"}, env: brokers, key: "--wipe"},
		{args: []string{"--parallel", "0"}, env: brokers, key: "--parallel"},
		{args: []string{"--max-rate", "-5"}, env: brokers, key: "--max-rate"},
		{args: []string{"--cpu-profile", "/nonexistent-dir/replayer.pprof"}, env: brokers, key: "--cpu-profile"},
		{env: nil, key: "kafka.brokers"}, // embedded mode makes no sense for a replay
		{env: append(brokers, "PROJECTOR_TIME_ZONE=Nowhere/Land"), key: "time_zone"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(c.args, c.env, &out, &errOut)
		msg := strings.TrimRight(errOut.String(), "\n")
		if code != 2 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, c.key) {
			t.Errorf("args %v env %v: exit %d, stderr %q; want 2 and one line naming %s", c.args, c.env, code, msg, c.key)
		}
	}
}

// --version prints one line naming the command, the module version and the
// VCS revision and exits 0, whatever the rest of the configuration says.
func TestVersionFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"--version", "--to", "soon"}, nil, &out, &errOut)
	line := strings.TrimRight(out.String(), "\n")
	if code != 0 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "replayer: projector ") || !strings.Contains(line, ", revision ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want 0 and one line naming replayer, the module and the revision", code, line, errOut.String())
	}
}
