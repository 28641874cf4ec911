package testredis

import "time"

// Option changes how servers are started.
type Option func(*config)

// config is the set of choices made by Options.
type config struct {
	flavor       Flavor
	aof          bool
	extraArgs    []string
	readyTimeout time.Duration
	// sentinel holds the choices of StartSentinel.
	sentinelPassword string
	downAfter        time.Duration
	failoverTimeout  time.Duration
}

// defaultConfig returns the configuration used when no Option is given.
func defaultConfig() config {
	return config{flavor: Redis, readyTimeout: 30 * time.Second, downAfter: time.Second, failoverTimeout: 3 * time.Second}
}

// applyOptions folds opts into the default configuration.
func applyOptions(opts []Option) config {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithAOF turns on the append-only file (appendonly yes, appendfsync
// everysec), so that data written before Stop survives Restart. Without it the
// server persists nothing (appendonly no, save "").
func WithAOF() Option {
	return func(c *config) { c.aof = true }
}

// WithArgs appends raw redis-server command-line arguments, for example
// WithArgs("--maxmemory", "64mb") or, for a cluster,
// WithArgs("--cluster-node-timeout", "15000"). They come after the package's
// own arguments and so override them.
func WithArgs(args ...string) Option {
	return func(c *config) { c.extraArgs = append(c.extraArgs, args...) }
}

// WithReadyTimeout sets how long a start waits for the server (or, for a
// cluster, for cluster_state:ok on every node) before failing the test.
// The default is 30s.
func WithReadyTimeout(d time.Duration) Option {
	return func(c *config) { c.readyTimeout = d }
}

// WithFlavor chooses the server implementation (default Redis). Valkey needs
// scripts/testenv/valkey.sh fetch first; a missing binary or an unknown
// flavor fails the test at start.
func WithFlavor(f Flavor) Option {
	return func(c *config) { c.flavor = f }
}

// WithValkey starts valkey-server 8.1 instead of redis-server:
// WithFlavor(Valkey).
func WithValkey() Option { return WithFlavor(Valkey) }

// WithSentinelPassword makes the Sentinels of StartSentinel require AUTH
// with password (requirepass in their configuration); their Client
// authenticates with it. The data nodes stay without a password.
func WithSentinelPassword(password string) Option {
	return func(c *config) { c.sentinelPassword = password }
}

// WithSentinelTimings sets the Sentinels' down-after-milliseconds (how long
// the master may not answer before it is taken for down; default 1s) and
// failover-timeout (default 3s) of StartSentinel.
func WithSentinelTimings(downAfter, failoverTimeout time.Duration) Option {
	return func(c *config) { c.downAfter, c.failoverTimeout = downAfter, failoverTimeout }
}
