package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"projector/internal/testing/bench"
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

// TestPrintLiveRounds: the live phases' commandstats come per rate, with the
// first round's calls per event and every round's microseconds per event
// side by side.
func TestPrintLiveRounds(t *testing.T) {
	live := func(rate int, events float64, usec int64) bench.Live {
		return bench.Live{Rate: rate, Events: events, Commands: map[string]bench.CommandStat{
			"watch": {Calls: 10, Usec: usec}, "hset": {Calls: 200, Usec: 100}}}
	}
	var out bytes.Buffer
	printLive(&out, "consumer", []bench.Live{live(10000, 100, 600), live(20000, 200, 400), live(10000, 100, 700)})
	text := out.String()
	for _, want := range []string{
		"consumer's live phases at 10000 ev/s",
		"us/ev r1  us/ev r2",
		"watch                   0.100     6.000     7.000",
		"hset                    2.000     1.000     1.000",
		"consumer's live phases at 20000 ev/s",
		"watch                   0.050     2.000\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "watch  ") > strings.Index(text, "hset  ") {
		t.Errorf("busiest command not first:\n%s", text)
	}
}

// --version prints one line naming the command, the module version and the
// VCS revision and exits 0 without starting anything.
func TestVersionFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"--version", "-events", "0"}, &out, &errOut)
	line := strings.TrimRight(out.String(), "\n")
	if code != 0 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "bench: projector ") || !strings.Contains(line, ", revision ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want 0 and one line naming bench, the module and the revision", code, line, errOut.String())
	}
}
