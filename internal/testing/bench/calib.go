package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/gen"
	"projector/pkg/events"
	"projector/pkg/projections"
)

// Calibration is the machine's speed at one moment, measured on fixed work
// that no change of projector touches: this machine's speed has been seen to
// change by 2x or more within minutes, so every run reports it at its start
// and end, and figures of different runs are compared through it.
type Calibration struct {
	// RedisCallUS is Redis's CPU per INCRBY called from a Lua script, in
	// microseconds (INFO cpu of all servers over calibCalls calls on one key).
	RedisCallUS float64
	// PlanUS is this process's time to decode and plan one event of a fixed
	// generated log, in microseconds (the best of three passes).
	PlanUS float64
}

// String is the calibration as a log line.
func (c Calibration) String() string {
	return fmt.Sprintf("machine: Redis %.2f us of CPU per INCRBY from Lua, Go %.2f us to decode and plan an event", c.RedisCallUS, c.PlanUS)
}

const (
	calibCalls  = 200_000 // INCRBYs from Lua
	calibEvents = 20_000  // events decoded and planned per pass
)

// calibScript calls INCRBY on KEYS[1] ARGV[1] times.
var calibScript = redis.NewScript(`for i = 1, tonumber(ARGV[1]) do redis.call('INCRBY', KEYS[1], 1) end return 1`)

// Calibrate measures the machine's speed (see Calibration).
func Calibrate(ctx context.Context, r *Redis) (Calibration, error) {
	var c Calibration
	rdb := r.Client()
	before, err := r.CPUSeconds(ctx)
	if err != nil {
		return c, err
	}
	const perCall = 1000
	for range calibCalls / perCall {
		if err := calibScript.Run(ctx, rdb, []string{"px:bench-calibration"}, perCall).Err(); err != nil {
			return c, fmt.Errorf("calibration script: %w", err)
		}
	}
	after, err := r.CPUSeconds(ctx)
	if err != nil {
		return c, err
	}
	if err := rdb.Del(ctx, "px:bench-calibration").Err(); err != nil {
		return c, fmt.Errorf("calibration key: %w", err)
	}
	c.RedisCallUS = 1e6 * (after - before) / calibCalls
	c.PlanUS, err = planSpeed()
	return c, err
}

// planSpeed decodes and plans a fixed log of calibEvents events three times
// and returns the best pass's microseconds per event.
func planSpeed() (float64, error) {
	gc := gen.DefaultConfig()
	gc.Seed, gc.Start = 99, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	log := gen.New(gc).Log(calibEvents)
	p, err := projections.NewPlanner(projections.Defaults(), time.UTC, "")
	if err != nil {
		return 0, err
	}
	now := gc.Start.Add(gc.Span)
	var buf []projections.Write
	best := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		for _, r := range log {
			ev, err := events.Decode(r.Value)
			if err != nil {
				continue // the generator's poison records
			}
			buf = p.Plan(ev, now, buf[:0])
		}
		best = min(best, time.Since(start))
	}
	return float64(best.Microseconds()) / calibEvents, nil
}
