package app

import (
	"os"
	"runtime/debug"
)

// The garbage-collector settings of the consumer and the replayer, applied
// by TuneGC unless GOGC or GOMEMLIMIT are set. A batch's garbage is a few MB
// (the consumer) or some hundreds (the replayer's batches of 50,000):
// collecting less often costs little memory and saves a good part of the
// CPU the collector takes per event. With
// GOGC 400 the heap may grow to five times what the batches in flight keep
// live; above the soft limit the collector runs more often instead.
const (
	gcPercent = 400
	// ConsumerMemoryLimit: a consumer keeps a batch of 20000 live, the
	// records its fetch queue holds (batch.max_events) and an answer of up to
	// 1 MiB per partition; at 512 MiB the collector ran so often that it took
	// a third of the consumer's CPU on a backlog.
	ConsumerMemoryLimit = 1 << 30
	// ReplayerMemoryLimit: the replayer keeps up to four batches of 50,000
	// records live (one read, one planned, one in each phase of its commit).
	ReplayerMemoryLimit = 2 << 30
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
