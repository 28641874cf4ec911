package replay

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress shows events done of total, events/s and ETA: a redrawn bar on a
// terminal, a line every 2 seconds otherwise.
type progress struct {
	out      io.Writer
	terminal bool
	total    int64
	doneN    int64
	start    time.Time
	last     time.Time
}

func newProgress(out io.Writer, terminal bool, total int64) *progress {
	now := time.Now()
	return &progress{out: out, terminal: terminal, total: total, start: now, last: now}
}

func (p *progress) add(n int64) {
	p.doneN += n
	if now := time.Now(); now.Sub(p.last) >= 2*time.Second || (p.terminal && now.Sub(p.last) >= 200*time.Millisecond) {
		p.last = now
		p.print()
	}
}

func (p *progress) print() {
	if p.out == nil {
		return
	}
	secs := max(time.Since(p.start).Seconds(), 1e-9)
	rate := float64(p.doneN) / secs
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

func (p *progress) done() {
	p.print()
	if p.terminal && p.out != nil {
		fmt.Fprintln(p.out)
	}
}
