package projections

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// mdSection returns the text of the section of a Markdown file starting with
// the heading prefix (e.g. "## 4. "), up to the next heading of that level.
func mdSection(t *testing.T, file, heading string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(data), "\n"+heading)
	if !ok {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	level := heading[:strings.Index(heading, " ")+1]
	text, _, _ = strings.Cut(text, "\n"+level)
	return text
}

var quoted = regexp.MustCompile("`([^`]+)`")

// backticked returns the `quoted` strings of s.
func backticked(s string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestContractKeyTable: docs/contract.md section 4 names the registry's
// projections, its table has rows for exactly them, every key of a row
// matches the row's projection's patterns, and every pattern of a
// projection (bookkeeping `px:` keys aside, section 9) matches a key of its rows.
func TestContractKeyTable(t *testing.T) {
	text := mdSection(t, "../../docs/contract.md", "## 4. ")
	_, list, _ := strings.Cut(text, " projections: ")
	list, _, _ = strings.Cut(list, " (")
	var listed []string
	for _, n := range strings.Split(list, ",") {
		listed = append(listed, strings.TrimSpace(n))
	}
	if !reflect.DeepEqual(listed, Names()) {
		t.Errorf("section 4 lists projections %q, the registry %q", listed, Names())
	}
	hit := map[string]bool{}
	rows := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		name := strings.Trim(cells[0], "| `")
		s, ok := Lookup(name)
		if !ok {
			t.Errorf("section 4 has a row for %q, which is no projection", name)
			continue
		}
		rows[name] = true
		for _, key := range backticked(cells[1]) {
			if !s.Owns("", key) {
				t.Errorf("section 4: key %s of %s matches none of its patterns %v", key, name, s.Patterns)
			}
			for _, p := range s.Patterns {
				hit[name+" "+p] = hit[name+" "+p] || globMatch(p, key)
			}
		}
	}
	for _, s := range All() {
		if !rows[s.Name] {
			t.Errorf("section 4 has no row for %s", s.Name)
		}
		for _, p := range s.Patterns {
			if !hit[s.Name+" "+p] && !strings.HasPrefix(p, "px:") {
				t.Errorf("section 4: no key of %s matches its pattern %s", s.Name, p)
			}
		}
	}
}

// listedAfter returns the `quoted` names in the parenthesis that follows
// label in text, up to its end or a ';'.
func listedAfter(t *testing.T, text, label string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(text, label+" (")
	if !ok {
		t.Fatalf("no %q", label)
	}
	rest, _, _ = strings.Cut(rest, ")")
	rest, _, _ = strings.Cut(rest, ";")
	return backticked(rest)
}

// TestContractRebuildModes: docs/contract.md section 6.2 and the runbook
// (docs/runbooks.md) list as global projections (held) exactly those the
// registry rebuilds with RebuildHold, and as per-user ones (consumers
// paused) the others.
func TestContractRebuildModes(t *testing.T) {
	var hold, pause []string
	for _, s := range All() {
		switch s.Rebuild() {
		case RebuildHold:
			hold = append(hold, s.Name)
		case RebuildPause:
			pause = append(pause, s.Name)
		}
	}
	contract := mdSection(t, "../../docs/contract.md", "### 6.2 ")
	runbook := mdSection(t, "../../docs/runbooks.md", "## Rebuilding a projection")
	for _, c := range []struct {
		where, text, label string
		want               []string
	}{
		{"docs/contract.md section 6.2", contract, "**Global projections**", hold},
		{"docs/contract.md section 6.2", contract, "**Per-user projections**", pause},
		{"docs/runbooks.md", runbook, "Global projections", hold},
		{"docs/runbooks.md", runbook, "Projections with per-user keys", pause},
	} {
		if got := listedAfter(t, c.text, c.label); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s, %s: %q, the registry: %q", c.where, c.label, got, c.want)
		}
	}
}

// TestUpgradeTableNamesEveryPattern: the operators' table of settings
// changes (docs/operations.md) tells how to free a switched-off projection's
// memory with its key patterns: all of them.
func TestUpgradeTableNamesEveryPattern(t *testing.T) {
	data, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "| a projection switched off |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal(`docs/operations.md has no row "| a projection switched off |"`)
	}
	named := backticked(row)
	for _, s := range All() {
		for _, p := range s.Patterns {
			if !slices.Contains(named, p) {
				t.Errorf("docs/operations.md does not name %s's pattern %s", s.Name, p)
			}
		}
	}
}
