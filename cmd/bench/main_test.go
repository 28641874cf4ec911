package main

import (
	"bytes"
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
