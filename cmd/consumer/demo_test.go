package main

import (
	"strings"
	"testing"
	"time"
)

// Output bounds of 20 seconds of the embedded demo. Its generator makes
// about 20 poison records a second; written one line each they are some
// 400 lines, and about 90 lines come between two progress lines.
const (
	demoRun          = 20 * time.Second
	maxDemoLines     = 100 // the banner, start-up lines, progress, poison samples and summaries
	maxBetweenReport = 25  // lines between two progress lines: less than a terminal's height
)

// The embedded demo's progress lines stay readable: per-record lines are
// rate-limited, so 20 seconds of output stay short while the dead-letter
// count keeps growing.
func TestDemoOutputStaysReadable(t *testing.T) {
	p := startBinary(t)
	p.waitLog(t, "consuming")
	time.Sleep(demoRun)
	if code := p.stop(t); code != 0 {
		t.Fatalf("demo exit code %d, want 0", code)
	}
	lines := strings.Split(strings.TrimRight(p.out.String(), "\n"), "\n")
	var reports []int // indices of the progress lines
	var lastReport string
	for i, l := range lines {
		if strings.HasPrefix(l, "[") && strings.Contains(l, "dead-lettered") {
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
	if strings.Contains(lastReport, "dead-lettered 0 ") {
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
		}
	}
	if samples == 0 || summaries == 0 {
		t.Errorf("%d poison lines in full and %d summaries, want some of both", samples, summaries)
	}
	t.Logf("%d output lines in %s: %d progress lines, %d poison lines in full, %d summaries",
		len(lines), demoRun, len(reports), samples, summaries)
}
