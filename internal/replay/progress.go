package replay

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"projector/internal/coord"
)

// publishEvery is the least time between two writes of the progress into Redis.
const publishEvery = time.Second

// progress shows records done of total, records/s and ETA: a redrawn bar on
// a terminal, a line every 2 seconds otherwise; with publishTo it also
// writes them into px:meta:{g} (coord.FieldDone, ...) at most every second and at the end. It is
// safe for concurrent use.
type progress struct {
	out      io.Writer
	terminal bool
	total    int64
	now      func() time.Time

	mu        sync.Mutex
	doneN     int64 // records done, including those done by an earlier run (resumed)
	fromN     int64 // records done when this run started
	start     time.Time
	last      time.Time
	published time.Time

	pubCtx context.Context
	meta   *coord.Meta
}

func newProgress(out io.Writer, terminal bool, total int64) *progress {
	now := time.Now()
	return &progress{out: out, terminal: terminal, total: total, now: time.Now, start: now, last: now}
}

// resumeAt counts done records an earlier, interrupted run applied.
func (p *progress) resumeAt(done int64) *progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doneN, p.fromN = done, done
	return p
}

// grow adds n records to the total (a rebuild's chase learns it round by round).
func (p *progress) grow(n int64) {
	p.mu.Lock()
	p.total += n
	p.mu.Unlock()
}

// publishTo makes the progress also go to the meta hash through m
// (written with ctx), starting now.
func (p *progress) publishTo(ctx context.Context, m *coord.Meta) *progress {
	p.mu.Lock()
	p.pubCtx, p.meta = ctx, m
	p.mu.Unlock()
	p.publish(true)
	return p
}

func (p *progress) add(n int64) {
	p.mu.Lock()
	p.doneN += n
	now := p.now()
	show := now.Sub(p.last) >= 2*time.Second || (p.terminal && now.Sub(p.last) >= 200*time.Millisecond)
	if show {
		p.last = now
		p.printLocked()
	}
	p.mu.Unlock()
	p.publish(false)
}

// rate is this run's records per second.
func (p *progress) rateLocked() float64 {
	return float64(p.doneN-p.fromN) / max(p.now().Sub(p.start).Seconds(), 1e-9)
}

func (p *progress) printLocked() {
	if p.out == nil {
		return
	}
	rate := p.rateLocked()
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(p.total-p.doneN)/rate) * time.Second).Round(time.Second).String()
	}
	frac := 1.0
	if p.total > 0 {
		frac = float64(p.doneN) / float64(p.total)
	}
	if p.terminal {
		bar := strings.Repeat("#", int(frac*30)) + strings.Repeat(".", 30-int(frac*30))
		fmt.Fprintf(p.out, "\r[%s] %d/%d events  %.0f ev/s  ETA %s   ", bar, p.doneN, p.total, rate, eta)
		return
	}
	fmt.Fprintf(p.out, "replay progress: %d/%d events (%.1f%%), %.0f ev/s, ETA %s\n", p.doneN, p.total, 100*frac, rate, eta)
}

// publish writes the progress into the meta hash when publishing and a
// second passed since the last write (or always when force), under the lock
// so that writes land in order. A failed write is left for the next one: the
// progress is for people, the replay goes on.
func (p *progress) publish(force bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.meta == nil || (!force && now.Sub(p.published) < publishEvery) {
		return
	}
	p.published = now
	_ = p.meta.PublishProgress(p.pubCtx, p.doneN, p.total, int64(p.rateLocked()), now)
}

func (p *progress) done() {
	p.mu.Lock()
	p.printLocked()
	if p.terminal && p.out != nil {
		fmt.Fprintln(p.out)
	}
	p.mu.Unlock()
	p.publish(true)
}
