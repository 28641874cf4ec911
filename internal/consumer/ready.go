package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/coord"
)

// Meta is the part of the applier that reads and creates px:meta:{g}.
type Meta interface {
	Status(ctx context.Context) (string, error)
	Token(ctx context.Context) (string, error)
	Init(ctx context.Context, info map[string]string) (bool, error)
	// MarkRolledBack sets status rolled_back: Redis went back in time beyond
	// what the consumer can repair, and a replay must rebuild the projections.
	MarkRolledBack(ctx context.Context, why string) error
	// ReadEvidence and Identity tell what Redis holds as applied and which
	// servers it is (see rollwatch.go).
	ReadEvidence(ctx context.Context) (apply.Evidence, error)
	Identity(ctx context.Context) (map[string]string, error)
}

// errShutdown ends a wait for readiness because the consumer is stopping.
var errShutdown = errors.New("shutting down while projections are not ready")

// errReread ends a session after Redis was not ready for a reason other
// than a handover's pause (its data lost, gone back in time beyond repair,
// a replay running): a replay rebuilds the projections up to the group's
// committed offsets, so the consumer reads again from them (the records it
// applied but did not commit are not in Redis any more), not from the batch
// it held.
var errReread = errors.New("projections rebuilt: read again from the committed offsets")

// readiness tracks whether Redis holds usable projections (docs/contract.md section 6).
type readiness struct {
	check sync.Mutex // serializes checkMeta, so the last report is the latest read
	mu    sync.Mutex
	lost  bool
	// held: a report made the consumer not ready (data lost, rolled back,
	// a replay running); the next "ready" makes it ready again, also while
	// no batch comes that would.
	held bool
	// rebuilt gets a signal when a held consumer is ready again: a replay
	// rebuilt Redis up to the committed offsets, so the session reads again
	// from them (errReread).
	rebuilt chan struct{}
}

// checkMeta looks at px:meta:{g} once. It creates the hash when it is missing
// and the group has never committed (a first start); it reports data loss when
// it is missing and the group has committed offsets. It returns the status.
func (c *Consumer) checkMeta(ctx context.Context) (string, error) {
	c.ready.check.Lock()
	defer c.ready.check.Unlock()
	status, err := c.meta.Status(ctx)
	if err != nil {
		return "", err
	}
	if status == "" {
		committed, err := c.groupHasCommits(ctx)
		if err != nil {
			return "", err
		}
		// A replayer may have finished while the offsets were read: look again,
		// so a stale "missing" never overwrites a newer "ready".
		if status, err = c.meta.Status(ctx); err != nil {
			return "", err
		}
		if status == "" && !committed {
			if _, err := c.meta.Init(ctx, c.opts.MetaInfo); err != nil {
				return "", err
			}
			c.log.Info("first start: created the projections meta hash")
			status = coord.StatusReady
		}
	}
	c.report(status)
	return status, nil
}

// report updates the data-lost metric, readiness and the log on a status change.
func (c *Consumer) report(status string) {
	c.ready.mu.Lock()
	defer c.ready.mu.Unlock()
	switch status {
	case coord.StatusReady:
		if c.ready.lost {
			c.log.Info("projections are ready again: resuming from the committed offsets")
		}
		if c.ready.held {
			c.health.SetReady(true, "")
			select {
			case c.ready.rebuilt <- struct{}{}:
			default:
			}
		}
		c.ready.lost, c.ready.held = false, false
		c.metrics.RedisDataLost.Set(0)
	case "":
		if !c.ready.lost {
			c.log.Error(fmt.Sprintf("Redis lost its data: %s is missing while group %q has committed offsets; "+
				"stopped applying and committing. Rebuild with `replayer` (same configuration); consumers resume on their own afterwards",
				c.opts.MetaKey, c.opts.GroupID))
		}
		c.ready.lost, c.ready.held = true, true
		c.metrics.RedisDataLost.Set(1)
		c.health.SetReady(false, "redis lost its data: run replayer")
	case coord.StatusPaused: // a replayer hands rebuilt projections back: a short, deliberate pause
		c.health.SetReady(true, "")
	case coord.StatusRolledBack:
		c.ready.held = true
		c.health.SetReady(false, "redis went back in time beyond repair: run replayer")
	default:
		c.ready.held = true
		c.health.SetReady(false, "projections status "+status+": waiting for the replay to finish")
	}
}

// waitReady blocks until px:meta:{g} says ready, polling every 2 seconds
// (every 100 ms while paused).
func (c *Consumer) waitReady(ctx context.Context) error {
	for {
		status, err := c.checkMeta(ctx)
		if err == nil && status == coord.StatusReady {
			c.health.SetReady(true, "")
			return nil
		}
		if err != nil {
			c.log.Warn("check projections meta", zap.Error(err))
			c.health.SetReady(false, "check projections meta failing: "+err.Error())
		}
		c.ackPause(ctx)
		wait := 2 * time.Second
		if status == coord.StatusPaused {
			wait = 100 * time.Millisecond // the pause of a handover is short: resume soon after it
		}
		select {
		case <-ctx.Done():
			return errShutdown
		case <-time.After(wait):
		}
	}
}

// publish publishes the consumer's settings, if configured to.
func (c *Consumer) publish(ctx context.Context) {
	if c.opts.Publish == nil {
		return
	}
	if err := c.opts.Publish(ctx, c.pause.acked()); err != nil && ctx.Err() == nil {
		c.log.Debug("publish settings", zap.Error(err))
	}
}

// watchMeta checks px:meta:{g} every 3 seconds, so an idle consumer reports
// data loss too, and a replayer's token every 100 ms (one HMGET), so that
// its pause is short.
func (c *Consumer) watchMeta(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			acked := c.ackPause(ctx)
			if time.Since(last) < 3*time.Second {
				continue
			}
			last = time.Now()
			if _, err := c.checkMeta(ctx); err != nil && ctx.Err() == nil {
				c.log.Debug("check projections meta", zap.Error(err))
			}
			if !acked {
				c.publish(ctx)
			}
		}
	}
}

// groupHasCommits reports whether the group committed an offset for any partition of its topics.
func (c *Consumer) groupHasCommits(ctx context.Context) (bool, error) {
	offs, err := c.kafka.Committed(ctx)
	return len(offs) > 0, err
}
