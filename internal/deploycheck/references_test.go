package deploycheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// outsideRef matches a reference to the contract's source outside the
// repository (the specification file beside the project's checkout, by its
// name or its folder), which a user who clones the project does not have;
// docs/contract.md is the contract.
var outsideRef = regexp.MustCompile(`\bSPE[C]\b|shared folder|\.\./shared/`)

// contractRef matches "docs/contract.md section 4" and "docs/contract.md
// sections 7 and 8".
var contractRef = regexp.MustCompile(`contract\.md\s+sections?\s+(\d+)(?:\s+and\s+(\d+))?`)

// repoDocs are the documents checked besides the Go comments.
var repoDocs = []string{"README.md", "BENCHMARKS.md", "configs/consumer.yaml"}

// textLine is one line of a Go comment or a document, with its line number.
type textLine struct {
	n    int
	text string
}

// commentLines returns, per Go file of the repository (relative path), the
// lines of its comments.
func commentLines(t *testing.T) map[string][]textLine {
	t.Helper()
	root := repoRoot(t)
	out := map[string][]textLine{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		out[rel] = []textLine{}
		for _, g := range f.Comments {
			for _, c := range g.List {
				first := fset.Position(c.Pos()).Line
				for i, line := range strings.Split(c.Text, "\n") {
					out[rel] = append(out[rel], textLine{first + i, line})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read the Go files: %v", err)
	}
	if len(out) < 100 {
		t.Fatalf("found only %d Go files under %s", len(out), root)
	}
	return out
}

// linesToCheck returns the lines of the Go comments and of the documents, by file.
func linesToCheck(t *testing.T) map[string][]textLine {
	t.Helper()
	lines := commentLines(t)
	for _, rel := range repoDocs {
		for i, line := range strings.Split(string(readRepoFile(t, rel)), "\n") {
			lines[rel] = append(lines[rel], textLine{i + 1, line})
		}
	}
	return lines
}

// joined is the text of lines, one per line.
func joined(lines []textLine) string {
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l.text)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// TestNoReferenceOutsideRepository: no Go comment and no document points to
// the specification outside the repository; they point to docs/contract.md.
func TestNoReferenceOutsideRepository(t *testing.T) {
	for file, lines := range linesToCheck(t) {
		for _, l := range lines {
			if m := outsideRef.FindString(l.text); m != "" {
				t.Errorf("%s:%d refers to %q, outside the repository (point to docs/contract.md): %s",
					file, l.n, m, strings.TrimSpace(l.text))
			}
		}
	}
}

// TestContractSectionsExist: every "docs/contract.md section N" in a Go
// comment or a document names a section docs/contract.md has.
func TestContractSectionsExist(t *testing.T) {
	contract := string(readRepoFile(t, "docs/contract.md"))
	sections := map[int]bool{}
	for _, line := range strings.Split(contract, "\n") {
		if rest, ok := strings.CutPrefix(line, "## "); ok {
			if n, err := strconv.Atoi(strings.SplitN(rest, ".", 2)[0]); err == nil {
				sections[n] = true
			}
		}
	}
	if len(sections) < 10 {
		t.Fatalf("docs/contract.md has %d numbered sections, want at least 10", len(sections))
	}
	refs := 0
	for file, lines := range linesToCheck(t) {
		for _, m := range contractRef.FindAllStringSubmatch(joined(lines), -1) {
			for _, s := range m[1:] {
				if s == "" {
					continue
				}
				refs++
				if n, _ := strconv.Atoi(s); !sections[n] {
					t.Errorf("%s refers to %q: docs/contract.md has no section %s", file, m[0], s)
				}
			}
		}
	}
	if refs == 0 {
		t.Fatal("no reference to a section of docs/contract.md found: the pattern is broken")
	}
}

// TestContractLinksExist: every link into docs/contract.md from the README
// names a heading it has.
func TestContractLinksExist(t *testing.T) {
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(readRepoFile(t, "docs/contract.md")), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			anchors[anchor(strings.TrimLeft(h, "# "))] = true
		}
	}
	links := regexp.MustCompile(`\(docs/contract\.md#([^)]+)\)`).FindAllStringSubmatch(string(readRepoFile(t, "README.md")), -1)
	if len(links) == 0 {
		t.Fatal("the README has no link into docs/contract.md")
	}
	for _, l := range links {
		if !anchors[l[1]] {
			t.Errorf("README links to docs/contract.md#%s, which is no heading", l[1])
		}
	}
}

// anchor is the GitHub anchor of a heading: lower case, spaces as '-',
// punctuation other than '-' and '_' dropped.
func anchor(heading string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			sb.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// TestScanSeesComments guards the scanner: it must find the comments of
// this very file.
func TestScanSeesComments(t *testing.T) {
	own := joined(commentLines(t)["internal/deploycheck/references_test.go"])
	if !strings.Contains(own, "guards the scanner") {
		t.Fatal("the scan does not see the comments of internal/deploycheck/references_test.go")
	}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "docs", "contract.md")); err != nil {
		t.Fatalf("docs/contract.md: %v", err)
	}
}
