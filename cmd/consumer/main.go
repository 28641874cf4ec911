// Command consumer projects shop events from Kafka into Redis read models as
// a member of the projector consumer group. With no brokers and no Redis
// configured it runs the embedded demo: in-process Kafka, Redis and traffic.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"projector/internal/app"
	"projector/internal/config"
	"projector/internal/embedded"
	"projector/internal/obs"
	"projector/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run is main with its inputs and outputs passed in; it returns the exit code:
// 0 after a clean stop or --version, 2 for bad configuration or a Redis
// server that evicts keys (redis.allow_eviction unset), 1 for other failures.
func run(args, environ []string, stdout, stderr io.Writer) int {
	if version.Asked(args) {
		fmt.Fprintln(stdout, version.String("consumer"))
		return 0
	}
	// First of all, so that a SIGTERM during start-up is a clean stop too.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app.TuneGC(app.ConsumerMemoryLimit)
	fs := pflag.NewFlagSet("consumer", pflag.ContinueOnError)
	demoRate := fs.Int("demo-rate", 2000, "embedded mode: generated events per second (0: as fast as possible)")
	poisonDetails := fs.Bool("demo-poison-details", false, "embedded mode: log the generated poison records as a real deployment does (the first of each reason in full)")
	fs.Bool("version", false, version.Usage)
	cfg, log, code := app.Setup(fs, args, environ, stderr)
	if log == nil {
		return code
	}
	var err error
	defer func() { _ = log.Sync() }()
	if cfg.Embedded {
		log.Debug("no kafka.brokers and no redis.addrs configured: running the embedded demo")
		err = embedded.Run(ctx, cfg, embedded.Options{Rate: *demoRate, PoisonDetails: *poisonDetails, Out: stdout,
			Terminal: stdout == os.Stdout && obs.IsTerminal(os.Stdout)}, log)
	} else {
		err = app.Run(ctx, cfg, log, app.Hooks{})
	}
	if app.ExitRefused(log, err) {
		return 2
	}
	var ke *config.KeyError
	if errors.As(err, &ke) {
		fmt.Fprintln(stderr, ke.Error())
		return 2
	}
	if err != nil && ctx.Err() == nil {
		log.Error("consumer failed", zap.Error(err))
		return 1
	}
	log.Info("consumer stopped")
	return 0
}
