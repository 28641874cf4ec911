package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"projector/internal/config"
	"projector/internal/redischeck"
)

// NewRedis returns the client for redis.mode and redis.addrs, authenticating
// with redis.username and redis.password (AUTH; none when both are empty)
// and using TLS when redis.tls.enabled is set (cfg.TLS.Client, built by
// config.Load). In sentinel mode it is a failover client (a *redis.Client)
// that connects to the master the Sentinels name, and whose commands fail
// while the master changes (masterFence in sentinel.go).
//
// go-redis does not retry on its own (MaxRetries -1): a command that fails
// on a broken connection returns the error to projector's own retry, which
// starts the batch again from reading the watermarks, so that a server that
// restarted with an older state is seen before anything is written to it.
func NewRedis(cfg config.RedisConfig) redis.UniversalClient {
	return newRedis(cfg, -1)
}

// NewReadRedis returns a client like NewRedis's for readers (cmd/api): its
// commands only read, so go-redis retries them on a broken connection
// (its default, 3 times) instead of failing a page. (A cluster client retries
// network errors within its MaxRedirects, 3, with either constructor.)
func NewReadRedis(cfg config.RedisConfig) redis.UniversalClient {
	return newRedis(cfg, 0)
}

// newRedis builds the client with go-redis's MaxRetries retries (0: its default).
func newRedis(cfg config.RedisConfig, retries int) redis.UniversalClient {
	if cfg.Mode == config.ModeSentinel {
		return newFailover(cfg, retries, retries < 0)
	}
	if cfg.Mode == config.ModeCluster {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.Addrs, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
			Username: cfg.Username, Password: cfg.Password, TLSConfig: cloneTLS(cfg.TLS.Client), MaxRetries: retries})
	}
	return redis.NewClient(&redis.Options{Addr: cfg.Addrs[0], ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		Username: cfg.Username, Password: cfg.Password, TLSConfig: cloneTLS(cfg.TLS.Client), MaxRetries: retries})
}

// cloneTLS returns a copy of c (nil for nil): a client may set fields on it.
func cloneTLS(c *tls.Config) *tls.Config {
	if c == nil {
		return nil
	}
	return c.Clone()
}

// permanent reports whether a Redis error is one that retrying cannot fix:
// the credentials are refused or the TLS handshake fails on configuration
// (unknown authority, wrong name, a TLS client talking to a plain server).
func permanent(err error) bool {
	return authError(err) || config.TLSSetupError(err)
}

// authError reports an AUTH refusal (WRONGPASS, NOAUTH) or a user lacking
// the permission for a command (NOPERM).
func authError(err error) bool {
	return redis.IsAuthError(err) || redis.IsPermissionError(err)
}

// redisSetupError explains a permanent Redis error in one line naming the
// keys to check (never their values).
func redisSetupError(err error) error {
	var sa *sentinelAuthError
	if errors.As(err, &sa) {
		return sa
	}
	if redis.IsPermissionError(err) {
		return fmt.Errorf("redis refused a command to this user (NOPERM: its ACL lacks a command or key pattern the process needs, listed in docs/operations.md): %w", err)
	}
	if authError(err) {
		return fmt.Errorf("redis refused the credentials (check redis.username and redis.password, PROJECTOR_REDIS_PASSWORD or redis.password_file): %w", err)
	}
	return fmt.Errorf("redis TLS handshake failed (check redis.tls.* and that the address is the server's TLS port): %w", err)
}

// PolicyCheck returns a start-up step for WaitRedis: in sentinel mode it
// first asks the Sentinels for the master (a name none of them knows is a
// *config.KeyError: exit code 2); then it runs redischeck on rdb (in
// sentinel mode also on the replicas the Sentinels list, any of which may
// be promoted) until the check has an answer, then does nothing. An
// evicting maxmemory-policy is a *redischeck.EvictionError unless
// redis.allow_eviction; accepted sets the gauge accepted to 1.
func PolicyCheck(cfg config.RedisConfig, rdb redis.UniversalClient, accepted prometheus.Gauge, log *zap.Logger) func(context.Context) error {
	done := false
	return func(ctx context.Context) error {
		if done {
			return nil
		}
		var replicas []*redis.Client
		if cfg.Mode == config.ModeSentinel {
			top, err := lookupMaster(ctx, cfg)
			if err != nil {
				return err
			}
			for _, a := range top.Replicas {
				c := redis.NewClient(&redis.Options{Addr: a, Username: cfg.Username, Password: cfg.Password, TLSConfig: cloneTLS(cfg.TLS.Client),
					DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1, DisableIdentity: true})
				defer c.Close()
				replicas = append(replicas, c)
			}
		}
		ok, err := redischeck.CheckWith(ctx, rdb, replicas, cfg.AllowEviction, log)
		if err != nil {
			return err
		}
		done = true
		if ok {
			accepted.Set(1)
		}
		return nil
	}
}
