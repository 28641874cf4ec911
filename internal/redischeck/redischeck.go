// Package redischeck checks at start-up that the Redis servers keep every
// key: a maxmemory-policy that evicts keys (allkeys-*, volatile-*) would
// silently drop projection keys and idempotency markers, and a redelivery of
// an event whose marker was evicted would then be counted twice. The
// consumer, the replayer and the read API run the same check.
package redischeck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// AllowKey is the configuration key that accepts an evicting policy.
const AllowKey = "redis.allow_eviction"

// Server is one Redis server (a master on Redis Cluster) and its
// maxmemory-policy.
type Server struct {
	Addr   string
	Policy string
}

// EvictionError is the refusal to start: a server's maxmemory-policy evicts
// keys and redis.allow_eviction is false. Commands exit with code 2 on it
// (find it with errors.As).
type EvictionError struct {
	// Servers are the servers whose policy evicts, sorted by address.
	Servers []Server
}

// Error returns one line naming every evicting server, its policy and the
// key that accepts it.
func (e *EvictionError) Error() string {
	return describe(e.Servers) + ": evicting keys would drop projections and idempotency markers " +
		"(set it to noeviction, or accept it with " + AllowKey + "=true)"
}

// describe renders servers as "redis A: maxmemory-policy is P; redis B: ...".
func describe(servers []Server) string {
	parts := make([]string, len(servers))
	for i, s := range servers {
		parts[i] = fmt.Sprintf("redis %s: maxmemory-policy is %s", s.Addr, s.Policy)
	}
	return strings.Join(parts, "; ")
}

// Evicts reports whether a maxmemory-policy evicts keys once maxmemory is
// reached: every policy but noeviction.
func Evicts(policy string) bool {
	return strings.HasPrefix(policy, "allkeys-") || strings.HasPrefix(policy, "volatile-")
}

// Check reads maxmemory-policy (CONFIG GET) on rdb's server, or on every
// master of a *redis.ClusterClient. An evicting policy is an *EvictionError
// unless allow is true; then Check logs one warning line and returns
// accepted true. A server that refuses CONFIG GET (a renamed or disabled
// command, an ACL user without +config, as on managed Redis) is logged in
// one warning line and does not stop the start. Any other error (Redis
// unreachable, still loading) is returned wrapped, for the caller to retry.
func Check(ctx context.Context, rdb redis.UniversalClient, allow bool, log *zap.Logger) (accepted bool, err error) {
	return CheckWith(ctx, rdb, nil, allow, log)
}

// CheckWith is Check over rdb's servers and the servers of others: the
// replicas of a master behind Redis Sentinel, any of which may be promoted.
// A server of others that does not answer is left out (a replica that is
// down does not hold up the start).
func CheckWith(ctx context.Context, rdb redis.UniversalClient, others []*redis.Client, allow bool, log *zap.Logger) (accepted bool, err error) {
	found, err := policies(ctx, rdb)
	if err != nil {
		return false, err
	}
	for _, c := range others {
		if r, err := policyOf(ctx, c); err == nil {
			found = append(found, r)
		}
	}
	var evicting []Server
	var unchecked []string
	var reply string
	for _, r := range found {
		switch {
		case r.refused != "":
			unchecked = append(unchecked, r.Addr)
			reply = r.refused
		case Evicts(r.Policy):
			evicting = append(evicting, r.Server)
		}
	}
	if len(unchecked) > 0 {
		log.Warn("could not check maxmemory-policy (CONFIG GET refused): make sure it is noeviction, "+
			"an evicting policy drops projections and idempotency markers",
			zap.Strings("redis", unchecked), zap.String("reply", reply))
	}
	if len(evicting) == 0 {
		return false, nil
	}
	if !allow {
		return false, &EvictionError{Servers: evicting}
	}
	log.Warn(describe(evicting) + ": accepted by " + AllowKey + "=true; evicted keys are lost projections, " +
		"and redeliveries of events whose idempotency markers were evicted are counted twice")
	return true, nil
}

// result is what one server said.
type result struct {
	Server
	refused string // the reply when CONFIG GET was refused
}

// policies reads the policy of every server of rdb, sorted by address.
func policies(ctx context.Context, rdb redis.UniversalClient) ([]result, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		r, err := policyOf(ctx, c)
		if err != nil {
			return nil, err
		}
		return []result{r}, nil
	case *redis.ClusterClient:
		var (
			mu  sync.Mutex
			out []result
		)
		err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			r, err := policyOf(ctx, n)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			out = append(out, r)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("redis cluster masters: %w", err)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
		return out, nil
	}
	return nil, fmt.Errorf("check the eviction policy: unsupported Redis client %T", rdb)
}

// policyOf reads one server's policy.
func policyOf(ctx context.Context, c *redis.Client) (result, error) {
	addr := Addr(ctx, c)
	m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if refused(err) {
		return result{Server: Server{Addr: addr}, refused: err.Error()}, nil
	}
	if err != nil {
		return result{}, fmt.Errorf("redis %s: %w", addr, err)
	}
	p, ok := m["maxmemory-policy"]
	if !ok {
		return result{Server: Server{Addr: addr}, refused: "CONFIG GET maxmemory-policy returned nothing"}, nil
	}
	return result{Server: Server{Addr: addr, Policy: p}}, nil
}

// refused reports a server's refusal of CONFIG GET: Refused, or an ERR
// reply about a disabled CONFIG. Other replies (LOADING, too many clients)
// and connection errors are worth retrying.
func refused(err error) bool {
	if Refused(err) {
		return true
	}
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(strings.ToLower(re.Error()), "err") &&
		strings.Contains(strings.ToLower(re.Error()), "config")
}

// Refused reports a server's refusal of a command: NOPERM (the ACL user
// may not run it), or an ERR reply about an unknown (renamed away) command
// or subcommand. Retrying does not change it.
func Refused(err error) bool {
	if redis.IsPermissionError(err) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(re.Error())
	return strings.HasPrefix(msg, "err") && (strings.Contains(msg, "unknown command") ||
		strings.Contains(msg, "unknown subcommand"))
}

// OutOfMemory reports a Redis OOM reply: maxmemory is reached and the
// policy is noeviction, so writes are refused until memory is freed or
// maxmemory raised.
func OutOfMemory(err error) bool {
	return err != nil && (redis.IsOOMError(err) || strings.Contains(err.Error(), "OOM command not allowed"))
}

// Addr names the server behind c: the address of its options or, for a
// Sentinel failover client (whose options name no server), the address the
// server itself gives the connection (CLIENT INFO laddr), or the name in
// the options when it gives none.
func Addr(ctx context.Context, c *redis.Client) string {
	addr := c.Options().Addr
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	info, err := c.Do(ctx, "CLIENT", "INFO").Text()
	if err != nil {
		return addr
	}
	for _, f := range strings.Fields(info) {
		if v, ok := strings.CutPrefix(f, "laddr="); ok && v != "" {
			return v
		}
	}
	return addr
}
