package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// selfCPUSeconds is the CPU time this process (the load generator and the
// latency probe) has used.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// idleSeconds is the time the machine's CPUs have spent idle (idle and
// iowait of /proc/stat's cpu line, summed over the CPUs).
func idleSeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks float64
	for _, s := range f[4:6] { // idle, iowait
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		ticks += n
	}
	return ticks / clockTicks, nil
}

// busyCores is how many of the machine's CPUs were busy on average between
// two readings of idleSeconds taken wall apart.
func busyCores(idle0, idle1 float64, wall time.Duration, cpus int) float64 {
	if wall <= 0 {
		return 0
	}
	return float64(cpus) - (idle1-idle0)/wall.Seconds()
}
