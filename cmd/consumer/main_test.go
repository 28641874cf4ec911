package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad configuration stops start-up with exit code 2 and one line naming the key.
func TestBadConfigurationExitsTwo(t *testing.T) {
	cases := []struct {
		args []string
		env  []string
		key  string
	}{
		{env: []string{"PROJECTOR_PROJECTIONS_LAST_VIEWED_SIZE=0"}, key: "projections.last_viewed.size"},
		{env: []string{"PROJECTOR_TIME_ZONE=Mars/Base"}, key: "time_zone"},
		{env: []string{"PROJECTOR_IDEMPOTENCY_WINDOW=soon"}, key: "idempotency.window"},
		{env: []string{"PROJECTOR_NO_SUCH_KEY=1"}, key: "PROJECTOR_NO_SUCH_KEY"},
		{args: []string{"--config", "/nonexistent/consumer.yaml"}, key: "/nonexistent/consumer.yaml"},
		{args: []string{"--set", "projections.stats.granularities=week"}, key: "projections.stats.granularities"},
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
// VCS revision ("unknown" in a build without VCS stamping) and exits 0,
// whatever the rest of the configuration says.
func TestVersionFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"--version"}, []string{"PROJECTOR_NO_SUCH_KEY=1"}, &out, &errOut)
	line := strings.TrimRight(out.String(), "\n")
	if code != 0 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "consumer: projector ") || !strings.Contains(line, ", revision ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want 0 and one line naming consumer, the module and the revision", code, line, errOut.String())
	}
}
