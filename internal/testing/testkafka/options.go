package testkafka

import (
	"fmt"
	"strings"
	"time"
)

// Option changes how brokers are started.
type Option func(*config)

// config is the set of choices made by Options.
type config struct {
	props        []string
	startTimeout time.Duration
	secure       secureConfig
}

// defaultConfig returns the configuration used when no Option is given.
func defaultConfig() config {
	return config{startTimeout: 60 * time.Second}
}

// applyOptions folds opts into the default configuration and validates it.
func applyOptions(opts []Option) (config, error) {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	for _, kv := range c.props {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return c, fmt.Errorf("WithProps wants key=value, got %q", kv)
		}
	}
	if c.startTimeout < time.Second {
		return c, fmt.Errorf("WithStartTimeout wants at least 1s, got %s", c.startTimeout)
	}
	return c, nil
}

// WithProps adds broker properties, each "key=value", for example
// WithProps("message.max.bytes=3145728", "auto.create.topics.enable=false").
// They come after the script's defaults and so override them; in a cluster
// every node gets them.
func WithProps(kv ...string) Option {
	return func(c *config) { c.props = append(c.props, kv...) }
}

// WithStartTimeout sets how long a start or restart waits for every node to
// serve before failing the test. The default is 60s.
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) { c.startTimeout = d }
}
