package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/records"
)

// LeaseTTL is how long the lease of a replayer that died keeps a rerun out;
// a live replayer renews it every leaseRenew.
const (
	LeaseTTL   = 10 * time.Second
	leaseRenew = 3 * time.Second
)

// lease is a Redis lock (`px:lease:{g}`) that keeps a second replayer out.
type lease struct {
	rdb   redis.UniversalClient
	key   string
	token string
	stop  context.CancelFunc
}

var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

// acquireLease takes the lease or says who holds it and when to retry; it
// renews itself until released.
func acquireLease(ctx context.Context, rdb redis.UniversalClient, key, owner string, ttl time.Duration) (*lease, error) {
	token := owner + "/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ok, err := rdb.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("take lease %s: %w", key, err)
	}
	if !ok {
		holder, _ := rdb.Get(ctx, key).Result()
		left, _ := rdb.PTTL(ctx, key).Result()
		if left < 0 {
			left = 0
		}
		return nil, fmt.Errorf("another replayer is running (lease %s held by %q, renewed every %v while it runs); wait for it or, if it died, retry in %v",
			key, holder, min(leaseRenew, ttl/3), (left + time.Second - 1).Truncate(time.Second))
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l := &lease{rdb: rdb, key: key, token: token, stop: stop}
	go func() {
		t := time.NewTicker(min(leaseRenew, ttl/3))
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				_ = renewScript.Run(rctx, rdb, []string{key}, token, ttl.Milliseconds()).Err()
			}
		}
	}()
	return l, nil
}

// release gives the lease up.
func (l *lease) release(ctx context.Context) {
	l.stop()
	err := releaseScript.Run(ctx, l.rdb, []string{l.key}, l.token).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		_ = err // the lease expires on its own
	}
}

// waitLease takes the lease of a rebuild, waiting up to its ttl (and a
// little more) for the lease of a replayer that died to expire.
func waitLease(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration) (*lease, error) {
	deadline := time.Now().Add(ttl + 2*time.Second)
	for {
		l, err := acquireLease(ctx, rdb, key, records.ProcessName(), ttl)
		if err == nil || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
