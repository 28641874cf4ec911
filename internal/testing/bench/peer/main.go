package peer

import (
	"context"
	"fmt"
	"io"
	"time"

	"projector/internal/app"
	"projector/internal/config"
	"projector/internal/obs"
)

// Main runs the peer as a process (cmd/bench's "peer" subcommand) with the
// configuration of the PROJECTOR_* variables of environ, as the consumer
// reads them, until ctx ends. It returns the exit code: 0 after ctx ended, 2
// for bad configuration (one line naming the key on stderr), 1 otherwise.
func Main(ctx context.Context, environ []string, stderr io.Writer) int {
	// The consumer's garbage-collector settings (cmd/consumer), so that the
	// consumer CPU of both compares.
	app.TuneGC(app.ConsumerMemoryLimit)
	cfg, err := config.Load(nil, environ)
	if err == nil && cfg.Embedded {
		err = fmt.Errorf("config: kafka.brokers and redis.addrs: the peer needs both (no embedded mode)")
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	m := NewMetrics()
	if _, err := obs.Serve(ctx, cfg.HTTP.Addr, obs.NewMux(m.Registry, obs.NewHealth(nil)), nil); err != nil {
		fmt.Fprintln(stderr, "peer:", err)
		return 1
	}
	rdb := app.NewRedis(cfg.Redis)
	defer rdb.Close()
	p, err := New(cfg, rdb, m, time.Now)
	if err == nil {
		err = p.Run(ctx)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
