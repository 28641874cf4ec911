package logsample

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// clock is a settable clock for the tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newTest returns a Limiter on an observed logger and a clock.
func newTest(opts Options) (*Limiter, *observer.ObservedLogs, *clock) {
	core, logs := observer.New(zapcore.DebugLevel)
	c := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	opts.Now = c.Now
	return New(zap.New(core), "poison record dead-lettered", "poison records dead-lettered", opts), logs, c
}

// messages returns the logged messages in order.
func messages(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		out = append(out, e.Message)
	}
	return out
}

func TestFirstPerClassInFullThenOneSummary(t *testing.T) {
	l, logs, c := newTest(Options{PerClass: 2, Max: 10, Interval: 10 * time.Second, Level: zapcore.WarnLevel})
	for i := range 7 {
		l.Log("json", zap.Int("i", i))
	}
	for range 3 {
		l.Log("bad ts")
	}
	if got := logs.Len(); got != 4 {
		t.Fatalf("%d lines within the interval, want 4 (2 per class): %q", got, messages(logs))
	}
	c.Add(9 * time.Second)
	l.Tick()
	if got := logs.Len(); got != 4 {
		t.Fatalf("summary before the interval ended: %q", messages(logs))
	}
	c.Add(time.Second)
	l.Tick()
	all := logs.All()
	if len(all) != 5 {
		t.Fatalf("%d lines after the interval, want 4 full and 1 summary: %q", len(all), messages(logs))
	}
	sum := all[4]
	if want := "poison records dead-lettered: 10 in the last 10s (json: 7, bad ts: 3)"; sum.Message != want {
		t.Errorf("summary %q, want %q", sum.Message, want)
	}
	if sum.Level != zapcore.WarnLevel {
		t.Errorf("summary at level %v, want warn", sum.Level)
	}
	f := sum.ContextMap()
	if f["count"] != int64(10) || f["logged_in_full"] != int64(4) {
		t.Errorf("summary fields %v, want count 10 and logged_in_full 4", f)
	}
	if got := all[0].ContextMap(); got["class"] != "json" || got["i"] != int64(0) {
		t.Errorf("first full line fields %v, want class json and i 0", got)
	}
	l.Tick()
	l.Flush()
	if logs.Len() != 5 {
		t.Errorf("a second summary without new lines: %q", messages(logs))
	}
}

func TestNewIntervalWritesInFullAgain(t *testing.T) {
	l, logs, c := newTest(Options{PerClass: 1, Interval: time.Minute})
	l.Log("json")
	l.Log("json")
	c.Add(time.Minute)
	l.Log("json") // ends the interval: summary, then a full line of the new one
	got := messages(logs)
	want := []string{"poison record dead-lettered", "poison records dead-lettered: 2 in the last 1m0s (json: 2)", "poison record dead-lettered"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestNoSummaryWhenEverythingWasWritten(t *testing.T) {
	l, logs, c := newTest(Options{PerClass: 5, Interval: time.Second})
	l.Log("json")
	l.Log("bad ts")
	c.Add(2 * time.Second)
	l.Tick()
	l.Flush()
	if logs.Len() != 2 {
		t.Errorf("lines %q, want just the 2 full lines", messages(logs))
	}
}

func TestMaxBoundsFullLinesOfAllClasses(t *testing.T) {
	l, logs, _ := newTest(Options{PerClass: 5, Max: 3, Interval: time.Minute})
	for _, class := range []string{"a", "b", "c", "d", "e"} {
		l.Log(class)
	}
	if logs.Len() != 3 {
		t.Errorf("%d full lines, want Max 3", logs.Len())
	}
}

func TestFlushWritesThePartialInterval(t *testing.T) {
	l, logs, c := newTest(Options{PerClass: 1, Interval: time.Minute})
	for range 4 {
		l.Log("not JSON")
	}
	c.Add(1500 * time.Millisecond)
	l.Flush()
	all := logs.All()
	if len(all) != 2 || all[1].Message != "poison records dead-lettered: 4 in the last 2s (not JSON: 4)" {
		t.Errorf("lines %q, want one full line and the summary of 4", messages(logs))
	}
}

func TestClassesBeyondMaxClassesCountAsOther(t *testing.T) {
	l, logs, _ := newTest(Options{PerClass: 1, Max: 1, MaxClasses: 2, Interval: time.Minute})
	for _, class := range []string{"a", "b", "c", "d", "a"} {
		l.Log(class)
	}
	l.Flush()
	all := logs.All()
	if want := "poison records dead-lettered: 5 in the last 0s (a: 2, other: 2, b: 1)"; all[len(all)-1].Message != want {
		t.Errorf("summary %q, want %q", all[len(all)-1].Message, want)
	}
}

func TestRunTicksUntilContextEnds(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := New(zap.New(core), "line", "lines", Options{PerClass: 1, Interval: 40 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	l.Log("x")
	l.Log("x")
	deadline := time.Now().Add(10 * time.Second)
	for logs.FilterMessageSnippet("lines: 2 in the last").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no summary from Run within 10s: %q", messages(logs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// In brief mode the full lines go to debug level and each interval with
// lines gets one short summary at the Limiter's level, with the count as
// its only field: at info level one line per interval remains.
func TestBriefWritesFullLinesAtDebug(t *testing.T) {
	l, logs, c := newTest(Options{PerClass: 2, Interval: 10 * time.Second, Level: zapcore.InfoLevel,
		Brief: "generated on purpose; --log-level debug shows each"})
	for i := range 5 {
		l.Log("not JSON", zap.Int("i", i))
	}
	l.Log("bad ts")
	c.Add(10 * time.Second)
	l.Tick()
	all := logs.All()
	if len(all) != 4 {
		t.Fatalf("%d lines, want 3 full lines and 1 summary: %q", len(all), messages(logs))
	}
	for _, e := range all[:3] {
		if e.Level != zapcore.DebugLevel || e.Message != "poison record dead-lettered" {
			t.Errorf("full line %q at %v, want at debug", e.Message, e.Level)
		}
	}
	sum := all[3]
	want := "poison records dead-lettered: 6 in the last 10s (generated on purpose; --log-level debug shows each)"
	if sum.Message != want || sum.Level != zapcore.InfoLevel {
		t.Errorf("summary %q at %v, want %q at info", sum.Message, sum.Level, want)
	}
	if f := sum.ContextMap(); len(f) != 1 || f["count"] != int64(6) {
		t.Errorf("summary fields %v, want only count 6", f)
	}
	// An interval whose every line was written (at debug) still gets its summary.
	l.Log("bad ts")
	l.Flush()
	if last := logs.All()[logs.Len()-1]; !strings.HasPrefix(last.Message, "poison records dead-lettered: 1 in the last") {
		t.Errorf("last line %q, want the summary of 1", last.Message)
	}
}
