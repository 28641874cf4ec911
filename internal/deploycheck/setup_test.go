package deploycheck

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// setupScript is the set-up script behind make setup.
const setupScript = "scripts/testenv/setup.sh"

// stubSystem is a PATH directory holding the few real tools setup.sh uses
// plus stub programs, so a test decides what is "installed".
type stubSystem struct {
	t   *testing.T
	dir string
}

// newStubSystem links bash, dirname, cut, paste and chmod into a new
// directory and adds a stub id printing uid.
func newStubSystem(t *testing.T, uid string) *stubSystem {
	t.Helper()
	s := &stubSystem{t: t, dir: t.TempDir()}
	for _, tool := range []string{"bash", "dirname", "cut", "paste", "chmod"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s not found on PATH: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(s.dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	s.stub("id", "echo "+uid)
	return s
}

// stub writes an executable shell script named name running body.
func (s *stubSystem) stub(name, body string) {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		s.t.Fatal(err)
	}
}

// aptGet adds a stub apt-get that logs its arguments and, on install,
// creates the programs of installs (package -> program) that it names.
func (s *stubSystem) aptGet(installs map[string]string) {
	body := `echo "$*" >>"$(dirname "$0")/apt.log"` + "\n"
	for pkg, prog := range installs {
		body += `case " $* " in *" ` + pkg + ` "*) printf '#!/bin/sh\n' >"$(dirname "$0")/` + prog +
			`"; chmod +x "$(dirname "$0")/` + prog + `";; esac` + "\n"
	}
	s.stub("apt-get", body)
}

// aptLog returns the stub apt-get's calls.
func (s *stubSystem) aptLog() []string {
	data, err := os.ReadFile(filepath.Join(s.dir, "apt.log"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// run runs `setup.sh programs` with only the stub directory on PATH.
func (s *stubSystem) run() (stdout, stderr string, err error) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(s.t), setupScript), "programs")
	cmd.Env = []string{"PATH=" + s.dir}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// present stubs every program setup.sh checks except those in missing.
func (s *stubSystem) present(missing ...string) {
	for _, p := range []string{"redis-server", "java", "mvn", "chromium", "promtool", "pip3"} {
		if !slices.Contains(missing, p) {
			s.stub(p, "exit 0")
		}
	}
}

func TestSetupProgramsAllPresent(t *testing.T) {
	s := newStubSystem(t, "0")
	s.present()
	s.aptGet(nil)
	out, errOut, err := s.run()
	if err != nil {
		t.Fatalf("setup.sh programs: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if calls := s.aptLog(); calls != nil {
		t.Fatalf("apt-get called with everything present: %q", calls)
	}
}

func TestSetupProgramsNotRootStopsWithCommand(t *testing.T) {
	s := newStubSystem(t, "1000")
	s.present("promtool")
	s.aptGet(nil)
	_, errOut, err := s.run()
	if err == nil {
		t.Fatal("setup.sh programs without promtool, not root: succeeded")
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	want := "sudo apt-get install -y --no-install-recommends prometheus"
	if len(lines) != 1 || !strings.Contains(lines[0], "promtool") || !strings.Contains(lines[0], want) {
		t.Fatalf("stderr %q: want one line naming promtool and %q", errOut, want)
	}
	if calls := s.aptLog(); calls != nil {
		t.Fatalf("apt-get called as non-root: %q", calls)
	}
}

func TestSetupProgramsNoAptStops(t *testing.T) {
	s := newStubSystem(t, "0")
	s.present("redis-server")
	_, errOut, err := s.run()
	if err == nil {
		t.Fatal("setup.sh programs without redis-server and apt-get: succeeded")
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "missing redis-server") || !strings.Contains(lines[0], "Debian packages redis-server") {
		t.Fatalf("stderr %q: want one line naming redis-server and its package", errOut)
	}
}

func TestSetupProgramsRootInstallsMissing(t *testing.T) {
	s := newStubSystem(t, "0")
	s.present("chromium", "promtool", "pip3")
	s.aptGet(map[string]string{"chromium": "chromium", "prometheus": "promtool", "python3-pip": "pip3"})
	out, errOut, err := s.run()
	if err != nil {
		t.Fatalf("setup.sh programs as root: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	want := []string{"update -q", "install -q -y --no-install-recommends chromium prometheus python3-pip"}
	if calls := s.aptLog(); !slices.Equal(calls, want) {
		t.Fatalf("apt-get calls %q, want %q", calls, want)
	}
}

func TestSetupProgramsStillMissingAfterInstall(t *testing.T) {
	s := newStubSystem(t, "0")
	s.present("java")
	s.aptGet(nil) // "installs" nothing
	_, errOut, err := s.run()
	if err == nil || !strings.Contains(errOut, "still missing") || !strings.Contains(errOut, "java") {
		t.Fatalf("setup.sh programs with an install that does not help: err %v, stderr %q; want a failure naming java", err, errOut)
	}
}

// copyRepoFiles copies the files make setup needs (the Makefile, go.mod,
// go.sum and scripts/testenv) from the repository into dst, as a fresh
// clone has them: no .testenv.
func copyRepoFiles(t *testing.T, dst string) {
	t.Helper()
	root := repoRoot(t)
	for _, rel := range []string{"Makefile", "go.mod", "go.sum", "scripts/testenv"} {
		src := filepath.Join(root, filepath.FromSlash(rel))
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			target := filepath.Join(dst, strings.TrimPrefix(p, root))
			info, err := d.Info()
			if err != nil {
				return err
			}
			if d.IsDir() {
				return os.MkdirAll(target, 0o755)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return os.WriteFile(target, data, info.Mode().Perm())
		})
		if err != nil {
			t.Fatalf("copy %s: %v", rel, err)
		}
	}
}

// setupBound bounds one make setup run, so a stalled download fails the
// test with the output so far instead of hanging it.
const setupBound = 5 * time.Minute

// makeSetup runs make setup in dir with the test environment of dir itself.
func makeSetup(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make not found on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "setup")
	cmd.Dir = dir
	// make, the script and its downloads form one process group, killed
	// together when the bound passes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PROJECTOR_TESTENV_DIR=") && !strings.HasPrefix(kv, "PROJECTOR_VALKEY_SERVER=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("make setup in %s: killed after %s; output so far:\n%s", dir, setupBound, out)
	}
	if err != nil {
		t.Fatalf("make setup in %s: %v\n%s", dir, err, out)
	}
	return string(out)
}

// TestSetupOnFreshCopy runs make setup where nothing is fetched yet, then
// again: the first run fetches the Kafka jars and valkey-server into the
// copy's .testenv, the second finds them and fetches nothing.
func TestSetupOnFreshCopy(t *testing.T) {
	dir := t.TempDir()
	copyRepoFiles(t, dir)
	out := makeSetup(t, dir)
	if !strings.Contains(out, "setup.sh: ready:") {
		t.Fatalf("make setup output lacks the ready line:\n%s", out)
	}
	jars, err := filepath.Glob(filepath.Join(dir, ".testenv/kafka/lib/kafka_2.13-*.jar"))
	if err != nil || len(jars) == 0 {
		t.Fatalf("no Kafka broker jar in the copy's .testenv after make setup (%v):\n%s", err, out)
	}
	version, err := exec.Command(filepath.Join(dir, ".testenv/valkey/bin/valkey-server"), "--version").Output()
	if err != nil || !strings.Contains(string(version), "v=8.1.") {
		t.Fatalf("valkey-server --version in the copy = %q, %v; want Valkey 8.1", version, err)
	}
	again := makeSetup(t, dir)
	for _, skip := range []*regexp.Regexp{
		regexp.MustCompile(`kafka\.sh: jars already in`),
		regexp.MustCompile(`valkey\.sh: Valkey server v=8\.1\.\d+ already in`),
	} {
		if !skip.MatchString(again) {
			t.Errorf("second make setup does not say %q:\n%s", skip, again)
		}
	}
	if strings.Contains(again, "fetching") || strings.Contains(again, "downloading") {
		t.Errorf("second make setup fetched again:\n%s", again)
	}
}
