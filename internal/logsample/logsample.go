// Package logsample rate-limits a log line that is written once per record
// (a poison record dead-lettered, say): the first few lines of each reason
// class in an interval are written in full, the rest only counted, and one
// summary line per interval gives the counts by class. In brief mode (for
// lines that are expected, as the embedded demo's deliberate poison) the
// full lines go to debug level and the summary is one short line.
package logsample

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Defaults of Options.
const (
	DefaultPerClass   = 5
	DefaultMax        = 10
	DefaultInterval   = 10 * time.Second
	DefaultMaxClasses = 32
)

// OtherClass counts the lines of classes beyond Options.MaxClasses.
const OtherClass = "other"

// Options tune a Limiter; zero values take the defaults.
type Options struct {
	// PerClass is how many lines of one class an interval writes in full.
	PerClass int
	// Max is how many lines of all classes together an interval writes in full.
	Max int
	// Interval is the length of a counting interval and so the least time
	// between two summary lines.
	Interval time.Duration
	// MaxClasses bounds the classes counted apart in an interval; the lines
	// of further classes count as OtherClass.
	MaxClasses int
	// Level is the level of the full lines and the summaries (zapcore's
	// zero value is info).
	Level zapcore.Level
	// Brief, when not empty, writes the full lines at debug level and the
	// summary of every interval with lines as one short line at Level,
	// "<summary>: <n> in the last <interval> (<Brief>)", with the count as
	// its only field.
	Brief string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Limiter writes one kind of per-record line through a zap logger. It is
// safe for concurrent use.
type Limiter struct {
	log     *zap.Logger
	msg     string // of a full line
	summary string // of a summary line, e.g. "poison records dead-lettered"
	opts    Options

	mu     sync.Mutex
	start  time.Time      // of the current interval; zero when nothing was counted
	counts map[string]int // lines by class in the interval
	total  int            // lines in the interval
	full   int            // lines written in full in the interval
}

// New returns a Limiter writing full lines with message msg and summary
// lines starting with summary.
func New(log *zap.Logger, msg, summary string, opts Options) *Limiter {
	if opts.PerClass <= 0 {
		opts.PerClass = DefaultPerClass
	}
	if opts.Max <= 0 {
		opts.Max = DefaultMax
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxClasses <= 0 {
		opts.MaxClasses = DefaultMaxClasses
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Limiter{log: log, msg: msg, summary: summary, opts: opts, counts: map[string]int{}}
}

// Log counts one line of class and writes it in full (with the class as
// field "class" and fields) while the interval's allowance for the class
// lasts. A Log after the interval ended first writes its summary.
func (l *Limiter) Log(class string, fields ...zap.Field) {
	l.mu.Lock()
	now := l.opts.Now()
	l.rollLocked(now)
	if l.start.IsZero() {
		l.start = now
	}
	if _, ok := l.counts[class]; !ok && len(l.counts) >= l.opts.MaxClasses {
		class = OtherClass
	}
	l.counts[class]++
	l.total++
	write := l.counts[class] <= l.opts.PerClass && l.full < l.opts.Max
	if write {
		l.full++
	}
	l.mu.Unlock()
	if write {
		level := l.opts.Level
		if l.opts.Brief != "" {
			level = zapcore.DebugLevel
		}
		l.log.Log(level, l.msg, append(fields, zap.String("class", class))...)
	}
}

// Tick writes the summary of the interval if it has ended.
func (l *Limiter) Tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rollLocked(l.opts.Now())
}

// Flush writes the summary of the interval so far, ended or not (at
// shutdown), and starts a new interval.
func (l *Limiter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.summarizeLocked(l.opts.Now())
}

// Run calls Tick a few times per interval until ctx ends, so a summary
// follows its interval's end closely even when no further line comes.
func (l *Limiter) Run(ctx context.Context) {
	t := time.NewTicker(l.opts.Interval / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.Tick()
		}
	}
}

// rollLocked summarizes the interval when it has ended by now.
func (l *Limiter) rollLocked(now time.Time) {
	if !l.start.IsZero() && now.Sub(l.start) >= l.opts.Interval {
		l.summarizeLocked(now)
	}
}

// summarizeLocked writes the summary line of the interval (when some lines
// were only counted, or in brief mode when it had any) and resets the counts.
func (l *Limiter) summarizeLocked(now time.Time) {
	if l.start.IsZero() {
		return
	}
	took := now.Sub(l.start)
	switch {
	case l.opts.Brief != "":
		l.log.Log(l.opts.Level, fmt.Sprintf("%s: %d in the last %s (%s)", l.summary, l.total, span(took), l.opts.Brief),
			zap.Int("count", l.total))
	case l.total > l.full:
		l.log.Log(l.opts.Level, fmt.Sprintf("%s: %d in the last %s (%s)", l.summary, l.total, span(took), byCount(l.counts)),
			zap.Int("count", l.total), zap.Int("logged_in_full", l.full), zap.Duration("interval", took),
			zap.Any("by_class", l.counts))
	}
	l.start = time.Time{}
	l.total, l.full = 0, 0
	l.counts = map[string]int{}
}

// byCount lists "class: n" by falling count, then class.
func byCount(counts map[string]int) string {
	classes := make([]string, 0, len(counts))
	for c := range counts {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool {
		if counts[classes[i]] != counts[classes[j]] {
			return counts[classes[i]] > counts[classes[j]]
		}
		return classes[i] < classes[j]
	})
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = fmt.Sprintf("%s: %d", c, counts[c])
	}
	return strings.Join(parts, ", ")
}

// span formats an interval's length for people: whole seconds, or
// milliseconds below a second.
func span(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
