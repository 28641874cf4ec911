package deploycheck

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerfile is what the tests read from the Dockerfile.
type dockerfile struct {
	stages   []string // FROM lines
	user     string   // the last USER
	commands []string // the ./cmd/<name> packages built
}

func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	var d dockerfile
	pkg := regexp.MustCompile(`\./cmd/([a-z0-9_-]+)`)
	for _, line := range strings.Split(string(readRepoFile(t, "Dockerfile")), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "FROM "):
			d.stages = append(d.stages, line)
		case strings.HasPrefix(line, "USER "):
			d.user = strings.TrimSpace(strings.TrimPrefix(line, "USER "))
		case strings.HasPrefix(line, "RUN ") && strings.Contains(line, "go build"):
			for _, m := range pkg.FindAllStringSubmatch(line, -1) {
				d.commands = append(d.commands, m[1])
			}
		}
	}
	return d
}

// TestDockerfileShape checks the multi-stage build, the small final image
// and the non-root user.
func TestDockerfileShape(t *testing.T) {
	d := parseDockerfile(t)
	if len(d.stages) < 2 {
		t.Fatalf("want a multi-stage build, FROM lines: %q", d.stages)
	}
	final := d.stages[len(d.stages)-1]
	if !strings.Contains(final, "distroless/static") && !strings.Contains(final, "scratch") {
		t.Errorf("final stage %q: want distroless/static or scratch", final)
	}
	if d.user == "" || d.user == "root" || strings.HasPrefix(d.user, "0") {
		t.Errorf("USER %q: want a non-root user", d.user)
	}
}

// shipped are the commands the image carries; other directories
// under cmd/ (cmd/bench) are development tools.
var shipped = []string{"consumer", "replayer", "api"}

// TestDockerfileBuildsTheCommands checks that the Dockerfile builds exactly
// the shipped commands, that they exist, and that each builds, as there,
// into a static binary (no ELF interpreter, no shared libraries).
func TestDockerfileBuildsTheCommands(t *testing.T) {
	root := repoRoot(t)
	built := parseDockerfile(t).commands
	if !slices.Equal(slices.Sorted(slices.Values(built)), slices.Sorted(slices.Values(shipped))) {
		t.Errorf("the Dockerfile builds %v, want %v", built, shipped)
	}
	out := t.TempDir()
	args := []string{"build", "-trimpath", "-o", out + string(filepath.Separator)}
	for _, c := range shipped {
		if _, err := os.Stat(filepath.Join(root, "cmd", c, "main.go")); err != nil {
			t.Fatalf("cmd/%s/main.go: %v: the image build would fail", c, err)
		}
		args = append(args, "./cmd/"+c)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	for _, c := range shipped {
		checkStatic(t, filepath.Join(out, c))
	}
}

// checkStatic fails unless path is an ELF file without interpreter and
// without needed shared libraries.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Errorf("open %s as ELF: %v", path, err)
		return
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an ELF interpreter: not a static binary", filepath.Base(path))
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v: not a static binary", filepath.Base(path), libs)
	}
}
