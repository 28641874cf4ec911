package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"projector/internal/apply"
	"projector/internal/config"
	"projector/internal/redischeck"
)

// syncOf is the applier's wait for the redis.wait keys.
func syncOf(w config.WaitConfig) apply.Sync {
	return apply.Sync{Replicas: w.Replicas, AOF: w.AOF, Timeout: w.Timeout}
}

// checkWait makes sure every master can do what redis.wait asks: WAITAOF
// needs Redis 7.2+ or Valkey and appendonly yes, and the Redis user must be
// allowed WAIT and WAITAOF (else a *config.KeyError: start-up stops with
// exit code 2); fewer connected replicas than redis.wait.replicas is only a
// warning (replicas may join later; batches wait for them meanwhile), and a
// user refused INFO skips that count with a warning.
func checkWait(ctx context.Context, rdb redis.UniversalClient, w config.WaitConfig, log *zap.Logger) error {
	if w.Replicas == 0 && !w.AOF {
		return nil
	}
	one := func(ctx context.Context, c *redis.Client) error {
		addr := redischeck.Addr(ctx, c)
		if w.AOF {
			if err := c.Do(ctx, "WAITAOF", 1, 0, 1).Err(); err != nil {
				if redis.IsPermissionError(err) {
					return &config.KeyError{Key: "redis.wait.aof", Msg: fmt.Sprintf("redis %s refused WAITAOF to this user (allow +waitaof): %v", addr, err)}
				}
				if redisError(err) {
					return &config.KeyError{Key: "redis.wait.aof", Msg: fmt.Sprintf("redis %s cannot WAITAOF (needs Redis 7.2+ or Valkey with appendonly yes): %v", addr, err)}
				}
				return err
			}
		}
		if w.Replicas > 0 {
			if err := c.Do(ctx, "WAIT", 0, 1).Err(); redischeck.Refused(err) {
				return &config.KeyError{Key: "redis.wait.replicas", Msg: fmt.Sprintf("redis %s refused WAIT to this user (allow +wait): %v", addr, err)}
			} else if err != nil {
				return err
			}
			info, err := c.Info(ctx, "replication").Result()
			if redischeck.Refused(err) {
				log.Warn("redis refused INFO: the count of connected replicas against redis.wait.replicas is skipped",
					zap.String("redis", addr), zap.Error(err))
				return nil
			}
			if err != nil {
				return fmt.Errorf("INFO replication on %s: %w", addr, err)
			}
			if n := connectedReplicas(info); n < w.Replicas {
				log.Warn("fewer replicas connected than redis.wait.replicas: batches wait for them", zap.String("redis", addr),
					zap.Int("connected", n), zap.Int("wanted", w.Replicas))
			}
		}
		return nil
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, one)
	}
	c, ok := rdb.(*redis.Client)
	if !ok {
		return fmt.Errorf("unsupported redis client %T", rdb)
	}
	return one(ctx, c)
}

// redisError reports an error the server answered with (not a connection failure).
func redisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// connectedReplicas reads connected_slaves of INFO replication.
func connectedReplicas(info string) int {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			var n int
			_, _ = fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
}

// dialCounter counts the connections a Redis client makes.
type dialCounter struct{ n atomic.Uint64 }

func (d *dialCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			d.n.Add(1)
		}
		return conn, err
	}
}

func (d *dialCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (d *dialCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// countDials makes rdb count its connections (every node's, on a cluster).
func countDials(rdb redis.UniversalClient) *atomic.Uint64 {
	d := &dialCounter{}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(c *redis.Client) { c.AddHook(d) })
	} else {
		rdb.AddHook(d)
	}
	return &d.n
}
