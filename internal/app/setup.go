package app

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"projector/internal/config"
	"projector/internal/obs"
	"projector/internal/redischeck"
)

// Setup registers the configuration flags on fs (which already holds the
// command's own flags), parses args, loads the configuration and builds the
// logger. When it returns a nil logger the command must exit with code:
// 0 after --help, 2 for bad flags or configuration (the one-line reason is
// already on stderr).
func Setup(fs *pflag.FlagSet, args, environ []string, stderr io.Writer) (config.Config, *zap.Logger, int) {
	fs.SetOutput(stderr)
	fl := config.Register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return config.Config{}, nil, 0
		}
		fmt.Fprintln(stderr, "config:", err)
		return config.Config{}, nil, 2
	}
	cfg, err := config.Load(fl, environ)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return cfg, nil, config.ExitCode(err)
	}
	log, err := obs.NewLogger(cfg.Log.Level, cfg.Log.Format, obs.IsTerminal(os.Stderr))
	if err != nil {
		fmt.Fprintln(stderr, "config: log:", err)
		return cfg, nil, 2
	}
	return cfg, log, 0
}

// ExitRefused reports whether err is a refusal to start
// (*redischeck.EvictionError: a Redis server evicts keys). Then it has
// logged the refusal in one line, without a stack trace, and the command
// exits with code 2, as for bad configuration.
func ExitRefused(log *zap.Logger, err error) bool {
	var refusal *redischeck.EvictionError
	if !errors.As(err, &refusal) {
		return false
	}
	log.WithOptions(zap.AddStacktrace(zap.FatalLevel)).Error(refusal.Error())
	return true
}
