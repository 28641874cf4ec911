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

// repoDocs returns the documents checked besides the Go comments: the
// top-level ones, the example configuration and every Markdown file under docs/.
func repoDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md", "BENCHMARKS.md", "CHANGELOG.md", "configs/consumer.yaml"}
	root := repoRoot(t)
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list docs/: %v", err)
	}
	return docs
}

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
	for _, rel := range repoDocs(t) {
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

// markdownLink matches a Markdown link or image: its target, and the
// anchor after '#'.
var markdownLink = regexp.MustCompile(`\]\(([^)#\s]*)(?:#([^)\s]+))?\)`)

// anchors returns the GitHub anchors of a Markdown file's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if h, ok := strings.CutPrefix(line, "#"); ok && !fence {
			out[anchor(strings.TrimLeft(h, "# "))] = true
		}
	}
	return out
}

// TestDocLinksExist: every relative link of the Markdown documents points
// to a file of the repository and, with an anchor, to a heading of it.
func TestDocLinksExist(t *testing.T) {
	root := repoRoot(t)
	links := 0
	for _, rel := range repoDocs(t) {
		if !strings.HasSuffix(rel, ".md") {
			continue
		}
		text := string(readRepoFile(t, rel))
		fence := false
		for n, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
			}
			if fence {
				continue
			}
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				target, frag := m[1], m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				file := rel
				if target != "" {
					file = filepath.ToSlash(filepath.Join(filepath.Dir(rel), target))
					if _, err := os.Stat(filepath.Join(root, file)); err != nil {
						t.Errorf("%s:%d links to %s, which does not exist", rel, n+1, target)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(file, ".md") && !anchors(string(readRepoFile(t, file)))[frag] {
					t.Errorf("%s:%d links to %s#%s, which is no heading there", rel, n+1, file, frag)
				}
			}
		}
	}
	if links < 20 {
		t.Fatalf("found only %d links in the documents: the pattern is broken", links)
	}
}

// goFiles returns the contents of the repository's Go files, test files
// (test) or the others.
func goFiles(t *testing.T, test bool) string {
	t.Helper()
	root := repoRoot(t)
	var sb strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") != test {
			return nil
		}
		data, err := os.ReadFile(path)
		sb.Write(data)
		sb.WriteByte('\n')
		return err
	})
	if err != nil {
		t.Fatalf("read the Go files: %v", err)
	}
	return sb.String()
}

// docText returns the text of every document, by file.
func docText(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rel := range repoDocs(t) {
		out[rel] = string(readRepoFile(t, rel))
	}
	return out
}

// TestDocumentedTestsExist: every test, benchmark or fuzz test a document
// names exists ("TestEvictionPolicy*" names those starting so).
func TestDocumentedTestsExist(t *testing.T) {
	tests := goFiles(t, true)
	name := regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*\*?`)
	found := 0
	for rel, text := range docText(t) {
		for _, n := range name.FindAllString(text, -1) {
			found++
			if prefix, ok := strings.CutSuffix(n, "*"); ok {
				if !strings.Contains(tests, "func "+prefix) {
					t.Errorf("%s names %s: no test starts so", rel, n)
				}
			} else if !strings.Contains(tests, "func "+n+"(") {
				t.Errorf("%s names %s, which is no test", rel, n)
			}
		}
	}
	if found < 20 {
		t.Fatalf("found only %d test names in the documents: the pattern is broken", found)
	}
}

// TestDocumentedPathsExist: every repository path a document names in
// backticks (`internal/apply/plan.go`, `cmd/bench`) exists, so that moving
// code leaves no document pointing at nothing.
func TestDocumentedPathsExist(t *testing.T) {
	root := repoRoot(t)
	path := regexp.MustCompile("`((?:cmd|pkg|internal|scripts|deploy|configs|docs)/[A-Za-z0-9_./-]*[A-Za-z0-9_])`")
	found := 0
	for rel, text := range docText(t) {
		for _, m := range path.FindAllStringSubmatch(text, -1) {
			found++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m[1]))); err != nil {
				t.Errorf("%s names %s, which does not exist", rel, m[1])
			}
		}
	}
	if found < 20 {
		t.Fatalf("found only %d paths in the documents: the pattern is broken", found)
	}
}

// TestDocumentedMetricsExist: every projector_* metric a document names is
// defined in the code.
func TestDocumentedMetricsExist(t *testing.T) {
	code := goFiles(t, false)
	name := regexp.MustCompile(`\bprojector_[a-z_]+[a-z]`)
	found := 0
	for rel, text := range docText(t) {
		for _, n := range name.FindAllString(text, -1) {
			found++
			if !strings.Contains(code, `"`+n+`"`) {
				t.Errorf("%s names the metric %s, which the code does not define", rel, n)
			}
		}
	}
	if found < 10 {
		t.Fatalf("found only %d metric names in the documents: the pattern is broken", found)
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
