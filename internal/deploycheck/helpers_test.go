package deploycheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// repoRoot returns the module root (the directory holding go.mod).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("get working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// readRepoFile returns the content of a file given relative to the root.
func readRepoFile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return data
}

// readYAML parses a repository YAML file into out, failing the test.
func readYAML(t *testing.T, rel string, out any) {
	t.Helper()
	if err := yaml.Unmarshal(readRepoFile(t, rel), out); err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
}

// metricName matches the names of projector's own metrics and of the Go
// and process collectors in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:projector|go|process)_[a-zA-Z0-9_:]*`)

// metricsIn returns the sorted distinct metric names used in exprs.
func metricsIn(exprs ...string) []string {
	var out []string
	for _, e := range exprs {
		for _, m := range metricName.FindAllString(e, -1) {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	slices.Sort(out)
	return out
}
