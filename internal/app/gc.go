package app

import (
	"os"
	"runtime/debug"
)

// The consumer's garbage-collector settings, applied by TuneGC unless GOGC
// or GOMEMLIMIT are set. A batch's garbage is a few MB: collecting less
// often costs little memory and a quarter of the CPU per event
// (BENCHMARKS.md). With GOGC 400 the heap may grow to five times what a
// batch keeps live; above the soft limit the collector runs more often
// instead. The replayer keeps Go's defaults: GOGC 400 and a 1 GiB limit made
// no difference to its rate (BENCHMARKS.md section 3.1).
const (
	gcPercent = 400
	// ConsumerMemoryLimit: a consumer batch of 20000 keeps well below it live.
	ConsumerMemoryLimit = 512 << 20
)

// TuneGC sets GOGC 400 and the soft memory limit limit (bytes), each unless
// its variable is set in the environment.
func TuneGC(limit int64) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
}
