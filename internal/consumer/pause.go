package consumer

import (
	"context"
	"sync"

	"go.uber.org/zap"
)

// pausing lets a replayer that rebuilds projections know when no batch
// planned before a change of px:meta:{g} is in flight: it sets a token there
// (sync, with new holds, or pause, with status paused); a consumer
// acknowledges the token (in px:cfg:{g}) only while no batch of its is being
// applied, and every batch it starts afterwards reads the holds and the status
// first (a paused one applies nothing).
type pausing struct {
	applying sync.Mutex // held while the applier runs on a batch
	mu       sync.Mutex
	token    string // the last pause token acknowledged
}

func (p *pausing) acked() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.token
}

// ackPause acknowledges a pause or sync token that was not acknowledged
// yet, and publishes the acknowledgement at once. It reports whether it published.
// The token is read first: the batch in flight, if any, may have been
// planned before it was set, so the acknowledgement waits for its end.
func (c *Consumer) ackPause(ctx context.Context) bool {
	tok, err := c.meta.Token(ctx)
	if err != nil || tok == "" || tok == c.pause.acked() {
		return false
	}
	c.pause.applying.Lock()
	defer c.pause.applying.Unlock()
	c.pause.mu.Lock()
	c.pause.token = tok
	c.pause.mu.Unlock()
	c.log.Info("acknowledged a replayer rebuilding projections: no batch in flight", zap.String("token", tok))
	c.publish(ctx)
	return true
}
