package main

import (
	"strings"
	"testing"
	"time"

	"projector/internal/embedded"
)

// Output bounds of 20 seconds of the embedded demo. Its generator makes
// about 20 poison records a second; written one line each they would be
// some 400 lines.
const (
	demoRun          = 20 * time.Second
	maxBannerLines   = 6  // the banner before the first log line
	maxDemoLines     = 30 // banner, start-up lines, progress lines, poison summaries, shutdown
	maxBetweenReport = 4  // lines between two progress lines
	maxSummaryLen    = 120
)

// The embedded demo reads well on a terminal: the banner comes first, with
// the dashboard and redis-cli commands; progress lines start with their
// mark; the generator's poison records make one short summary line per
// interval (each record only at debug level); the dead-letter count grows.
func TestDemoOutputStaysReadable(t *testing.T) {
	p := startBinary(t)
	p.waitLog(t, "consuming")
	time.Sleep(demoRun)
	if code := p.stop(t); code != 0 {
		t.Fatalf("demo exit code %d, want 0", code)
	}
	lines := strings.Split(strings.TrimRight(p.out.String(), "\n"), "\n")

	if !strings.HasPrefix(lines[0], "projector embedded demo") {
		t.Fatalf("first output line %q, want the banner", lines[0])
	}
	banner := 1
	for banner < len(lines) && strings.HasPrefix(lines[banner], "  ") {
		banner++
	}
	text := strings.Join(lines[:banner], "\n")
	if banner > maxBannerLines {
		t.Errorf("banner of %d lines, want at most %d:\n%s", banner, maxBannerLines, text)
	}
	for _, want := range []string{"dashboard  http://localhost:", "redis-cli -p ", "# today's bestsellers", "# what user u1 viewed last"} {
		if !strings.Contains(text, want) {
			t.Errorf("banner does not say %q:\n%s", want, text)
		}
	}

	var reports []int // indices of the progress lines
	var lastReport string
	for i, l := range lines {
		if strings.HasPrefix(l, embedded.ProgressMark+" [") {
			reports = append(reports, i)
			lastReport = l
		}
	}
	if len(lines) > maxDemoLines {
		t.Errorf("%d output lines in %s, want at most %d", len(lines), demoRun, maxDemoLines)
	}
	if len(reports) < 3 {
		t.Fatalf("%d progress lines in %s, want at least 3", len(reports), demoRun)
	}
	for i := 1; i < len(reports); i++ {
		if n := reports[i] - reports[i-1] - 1; n > maxBetweenReport {
			t.Errorf("%d lines between progress lines %d and %d, want at most %d", n, i, i+1, maxBetweenReport)
		}
	}
	if !strings.Contains(lastReport, "dead-lettered ") || strings.Contains(lastReport, "dead-lettered 0 ") {
		t.Errorf("no poison record dead-lettered: %q", lastReport)
	}

	var samples, summaries int
	for _, l := range p.logLines() {
		msg, _ := l["msg"].(string)
		switch {
		case msg == "poison record dead-lettered":
			samples++
		case strings.HasPrefix(msg, "poison records dead-lettered: "):
			summaries++
			if len(msg) > maxSummaryLen || l["level"] != "info" || l["by_class"] != nil {
				t.Errorf("poison summary at %v, %d characters: %q; want a short info line", l["level"], len(msg), msg)
			}
			if !strings.Contains(msg, "--demo-poison-details") {
				t.Errorf("poison summary %q does not say where the records are", msg)
			}
		}
	}
	if samples != 0 || summaries == 0 {
		t.Errorf("%d poison lines in full and %d summaries at info level, want none and some", samples, summaries)
	}
	t.Logf("%d output lines in %s: a banner of %d, %d progress lines, %d poison summaries",
		len(lines), demoRun, banner, len(reports), summaries)
}
