package coord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// LeaseTTL is how long the lease of a replayer that died keeps a rerun out;
// a live replayer renews it every leaseRenew.
const (
	LeaseTTL   = 10 * time.Second
	leaseRenew = 3 * time.Second
)

// Lease is the replayer's lock px:lease:{g}: it keeps a second replayer out,
// and a pause whose lease is gone does not stop the consumers.
type Lease struct {
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

// AcquireLease takes the lease for owner or says who holds it and when to
// retry; it renews itself until released.
func (m *Meta) AcquireLease(ctx context.Context, owner string, ttl time.Duration) (*Lease, error) {
	key := m.keys.Lease()
	token := owner + "/" + strconv.FormatInt(m.now().UnixNano(), 36)
	ok, err := m.rdb.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("take lease %s: %w", key, err)
	}
	if !ok {
		holder, _ := m.rdb.Get(ctx, key).Result()
		left, _ := m.rdb.PTTL(ctx, key).Result()
		if left < 0 {
			left = 0
		}
		return nil, fmt.Errorf("another replayer is running (lease %s held by %q, renewed every %v while it runs); wait for it or, if it died, retry in %v",
			key, holder, min(leaseRenew, ttl/3), (left + time.Second - 1).Truncate(time.Second))
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l := &Lease{rdb: m.rdb, key: key, token: token, stop: stop}
	go func() {
		t := time.NewTicker(min(leaseRenew, ttl/3))
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				_ = renewScript.Run(rctx, m.rdb, []string{key}, token, ttl.Milliseconds()).Err()
			}
		}
	}()
	return l, nil
}

// WaitLease takes the lease, waiting up to ttl (and a little more) for the
// lease of a replayer that died to expire.
func (m *Meta) WaitLease(ctx context.Context, owner string, ttl time.Duration) (*Lease, error) {
	deadline := time.Now().Add(ttl + 2*time.Second)
	for {
		l, err := m.AcquireLease(ctx, owner, ttl)
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

// Held reports whether a replayer's lease exists.
func (m *Meta) Held(ctx context.Context) (bool, error) {
	n, err := m.rdb.Exists(ctx, m.keys.Lease()).Result()
	if err != nil {
		return false, fmt.Errorf("read %s: %w", m.keys.Lease(), err)
	}
	return n > 0, nil
}

// Release gives the lease up (it expires on its own when this fails).
func (l *Lease) Release(ctx context.Context) {
	l.stop()
	err := releaseScript.Run(ctx, l.rdb, []string{l.key}, l.token).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		_ = err // the lease expires on its own
	}
}
