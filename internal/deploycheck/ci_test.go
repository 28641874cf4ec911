package deploycheck

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeTestCommand returns the command of the README's "run all tests" row
// in "The two commands".
func readmeTestCommand(t *testing.T) string {
	t.Helper()
	cell := regexp.MustCompile("\\|\\s*`([^`]+)`\\s*\\|\\s*$")
	for _, line := range strings.Split(string(readRepoFile(t, "README.md")), "\n") {
		if !strings.HasPrefix(line, "| run all tests") {
			continue
		}
		m := cell.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("README row %q: no `command` in its last cell", line)
		}
		return m[1]
	}
	t.Fatal("README has no \"| run all tests\" row")
	return ""
}

// ciBoilerplate are the lines .ci/run may have besides the test command:
// strict mode, stderr to stdout, and going to the repository root.
var ciBoilerplate = []string{
	"set -euo pipefail",
	"exec 2>&1",
	`cd "$(dirname "$0")/.."`,
}

// shellCommands returns the non-empty lines of a shell script without
// comments (whole-line ones and " # ..." tails).
func shellCommands(script string) []string {
	var out []string
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, " #"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// TestCIRunsOnlyTheREADMETestCommand checks that CI does nothing a user
// following the README would not: .ci/run calls the README's test command
// and nothing else, so every set-up step lives behind that command.
func TestCIRunsOnlyTheREADMETestCommand(t *testing.T) {
	want := readmeTestCommand(t)
	if want != "make test" {
		t.Errorf("README test command = %q; the Makefile checks below assume make test", want)
	}
	var calls []string
	for _, line := range shellCommands(string(readRepoFile(t, ".ci/run"))) {
		if !slices.Contains(ciBoilerplate, line) {
			calls = append(calls, strings.TrimPrefix(line, "exec "))
		}
	}
	if !slices.Equal(calls, []string{want}) {
		t.Fatalf(".ci/run runs %q; want only the README's test command %q (set-up belongs in make setup)", calls, want)
	}
}

// makeRule is one rule of the Makefile: its prerequisites and recipe lines.
type makeRule struct {
	prereqs []string
	recipe  []string
}

// parseMakefile returns the Makefile's rules by target (simple rules only:
// "target: prereqs" followed by tab-indented recipe lines).
func parseMakefile(t *testing.T) map[string]makeRule {
	t.Helper()
	rules := map[string]makeRule{}
	head := regexp.MustCompile(`^([A-Za-z0-9_.-]+):(?:\s+(.*))?$`)
	current := ""
	for _, line := range strings.Split(string(readRepoFile(t, "Makefile")), "\n") {
		if strings.HasPrefix(line, "\t") {
			if current != "" {
				r := rules[current]
				r.recipe = append(r.recipe, strings.TrimSpace(line))
				rules[current] = r
			}
			continue
		}
		current = ""
		if m := head.FindStringSubmatch(line); m != nil && !strings.HasPrefix(m[1], ".") {
			current = m[1]
			rules[current] = makeRule{prereqs: strings.Fields(m[2])}
		}
	}
	return rules
}

// TestMakeTargetsSetUpFirst checks that make test and make bench (and make
// chaos, which needs the same servers) set up the environment themselves,
// and that make setup runs the set-up script.
func TestMakeTargetsSetUpFirst(t *testing.T) {
	rules := parseMakefile(t)
	setup, ok := rules["setup"]
	if !ok {
		t.Fatal("Makefile has no setup target")
	}
	if !slices.Contains(setup.recipe, "scripts/testenv/setup.sh") {
		t.Errorf("make setup runs %q, want scripts/testenv/setup.sh", setup.recipe)
	}
	for _, target := range []string{"test", "bench", "chaos"} {
		r, ok := rules[target]
		if !ok {
			t.Errorf("Makefile has no %s target", target)
			continue
		}
		if !slices.Contains(r.prereqs, "setup") {
			t.Errorf("make %s has prerequisites %q, want setup among them", target, r.prereqs)
		}
	}
}
