package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestOfWithVCS(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "projector", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3f2c1e9ab0d4"}, {Key: "vcs.time", Value: "2026-12-07T09:12:44Z"},
			{Key: "vcs.modified", Value: "true"}}}
	want := "consumer: projector (devel), revision 3f2c1e9ab0d4 (2026-12-07T09:12:44Z, modified), go1.26.8"
	if got := Of("consumer", info); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A build without VCS stamping (GOFLAGS=-buildvcs=false) says "unknown".
func TestOfWithoutVCS(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "projector", Version: "v1.2.0"}}
	if got, want := Of("api", info), "api: projector v1.2.0, revision unknown, go1.26.8"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := Of("bench", nil), "bench: projector unknown, revision unknown, unknown"; got != want {
		t.Errorf("no build info: got %q, want %q", got, want)
	}
}

func TestAsked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--version"}, true},
		{[]string{"--config", "x.yaml", "--version=true"}, true},
		{[]string{"--version=false"}, false},
		{[]string{"--", "--version"}, false},
		{nil, false},
	} {
		if got := Asked(c.args); got != c.want {
			t.Errorf("Asked(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// A command built with VCS stamping in this checkout prints the checkout's
// revision for --version (the environment may turn stamping off with
// GOFLAGS; this build turns it on).
func TestBuiltCommandNamesTheRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a command")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "api")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "projector/cmd/api")
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("api --version: %v", err)
	}
	if rev := strings.TrimSpace(string(head)); !strings.HasPrefix(string(out), "api: projector ") || !strings.Contains(string(out), "revision "+rev) {
		t.Errorf("api --version says %q, want revision %s", out, rev)
	}
}
