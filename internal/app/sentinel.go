package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"projector/internal/config"
)

// Redis behind Sentinel (redis.mode sentinel). The client is go-redis's
// failover client: every new connection asks a Sentinel of redis.addrs for
// the master named redis.sentinel.master_name, so after a failover the
// next connection goes to the promoted replica, without a restart. A
// connection to a master that died fails and is dropped; one to a master
// that was demoted gets READONLY, which makes go-redis drop it too (and the
// Sentinels close the clients of a demoted master). projector's own retry
// then starts the batch again from reading the watermarks, on the new
// master: a replica that had not caught up is Redis going back in time,
// found and repaired as after a restart (docs/contract.md section 5.2).
//
// One more case needs a fence (masterFence): in a planned failover the old
// master accepts writes until the Sentinels demote it, also after the
// replica was promoted; those writes are lost. A batch whose user phase
// wrote some users on the old master in that moment and the rest, with its
// global phase, on the new one would be committed without the first ones.
// So the writers' client fails every command that ran while the master
// changed or started shortly after: such a batch fails, and its retry
// starts from reading the new master.

// fenceAfterChange is how long after the client first connects to a new
// master its commands fail: longer than any pause between two commands of
// one batch.
const fenceAfterChange = 2 * time.Second

// failoverOptions returns the options of the failover client of cfg: the
// Sentinels with their credentials, the data nodes with redis.username,
// redis.password and redis.tls (go-redis dials the Sentinels with the same
// TLS configuration), and go-redis's retries.
func failoverOptions(cfg config.RedisConfig, retries int) *redis.FailoverOptions {
	return &redis.FailoverOptions{MasterName: cfg.Sentinel.MasterName, SentinelAddrs: cfg.Addrs,
		SentinelUsername: cfg.Sentinel.Username, SentinelPassword: cfg.Sentinel.Password,
		Username: cfg.Username, Password: cfg.Password, TLSConfig: cloneTLS(cfg.TLS.Client),
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxRetries: retries}
}

// newFailover returns the failover client of cfg, whose failed connections
// say which master they tried to reach (sentinelDial); with fence, commands
// around a change of master fail (masterFence: the writers' client).
func newFailover(cfg config.RedisConfig, retries int, fence bool) *redis.Client {
	c := redis.NewFailoverClient(failoverOptions(cfg, retries))
	c.AddHook(sentinelDial{master: cfg.Sentinel.MasterName, sentinels: cfg.Addrs})
	if fence {
		c.AddHook(&masterFence{window: fenceAfterChange, now: time.Now})
	}
	return c
}

// masterFence fails the commands that ran while the client's master
// changed, or started less than window after it: the change is seen when
// the client first connects to another address than before.
type masterFence struct {
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	addr    string    // the master of the last connection
	changed time.Time // when a connection first went to addr, after another
}

// DialHook notes a connection to another master.
func (f *masterFence) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			f.seen(conn.RemoteAddr().String())
		}
		return conn, err
	}
}

// ProcessHook fails a command that the fence covers.
func (f *masterFence) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := f.now()
		err := next(ctx, cmd)
		if ferr := f.check(start); err == nil && ferr != nil {
			cmd.SetErr(ferr)
			err = ferr
		}
		return err
	}
}

// ProcessPipelineHook fails every command of a pipeline (or transaction)
// that the fence covers.
func (f *masterFence) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := f.now()
		err := next(ctx, cmds)
		if ferr := f.check(start); ferr != nil {
			for _, c := range cmds {
				if c.Err() == nil {
					c.SetErr(ferr)
				}
			}
			if err == nil {
				err = ferr
			}
		}
		return err
	}
}

// seen records a connection to addr.
func (f *masterFence) seen(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.addr != "" && f.addr != addr {
		f.changed = f.now()
	}
	f.addr = addr
}

// check returns the error of a command that started at start, or nil when
// the fence does not cover it.
func (f *masterFence) check(start time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed.IsZero() || !f.changed.After(start.Add(-f.window)) {
		return nil
	}
	return fmt.Errorf("redis master changed to %s %s ago: commands of the first %s on it fail, so that no batch writes to two masters; retrying",
		f.addr, f.now().Sub(f.changed).Round(time.Millisecond), f.window)
}

// NewReplicaRedis returns the client api reads through with redis.read_from
// replicas (query.Options.Replica), or nil with read_from master. In
// sentinel mode it is a failover client whose connections go to the
// replicas the Sentinels list (to the master when they list none); in
// cluster mode a cluster client with ReadOnly, whose node clients may read
// from replicas. Its timeouts are short (2 s) and go-redis does not retry:
// a read the replica does not answer goes to the master instead.
func NewReplicaRedis(cfg config.RedisConfig) redis.UniversalClient {
	if cfg.ReadFrom != config.ReadFromReplicas {
		return nil
	}
	const timeout = 2 * time.Second
	if cfg.Mode == config.ModeCluster {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.Addrs, ReadOnly: true, ReadTimeout: timeout, WriteTimeout: timeout,
			Username: cfg.Username, Password: cfg.Password, TLSConfig: cloneTLS(cfg.TLS.Client), MaxRetries: -1})
	}
	o := failoverOptions(cfg, -1)
	o.ReplicaOnly, o.ReadTimeout, o.WriteTimeout = true, timeout, timeout
	return redis.NewFailoverClient(o)
}

// sentinelDial names the master, and what went wrong, in the error of a
// failed connection through the Sentinels: the reason /readyz gives while
// no master answers.
type sentinelDial struct {
	master    string
	sentinels []string
}

// DialHook wraps the dial errors.
func (h sentinelDial) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, h.explain(err)
		}
		return conn, nil
	}
}

// ProcessHook changes nothing.
func (sentinelDial) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook changes nothing.
func (sentinelDial) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// explain wraps err, from a dial of the failover client.
func (h sentinelDial) explain(err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, redis.Nil):
		return fmt.Errorf("no Sentinel of redis.addrs knows a master named %q (redis.sentinel.master_name): %w", h.master, err)
	case strings.Contains(err.Error(), "sentinels specified in configuration are unreachable"):
		return fmt.Errorf("no Sentinel of redis.addrs (%s) named the master %q: %w", strings.Join(h.sentinels, ","), h.master, err)
	}
	return fmt.Errorf("redis master %q, as the Sentinels name it, does not answer: %w", h.master, err)
}

// sentinelAuthError is a Sentinel refusing redis.sentinel.username and
// redis.sentinel.password: start-up stops with exit code 1 (as for the
// data nodes' credentials), naming the keys, never the password.
type sentinelAuthError struct {
	addr string
	err  error
}

func (e *sentinelAuthError) Error() string {
	return fmt.Sprintf("redis sentinel %s refused the credentials (check redis.sentinel.username and redis.sentinel.password, "+
		"PROJECTOR_REDIS_SENTINEL_PASSWORD or redis.sentinel.password_file): %v", e.addr, e.err)
}

func (e *sentinelAuthError) Unwrap() error { return e.err }

// sentinelTopology is what the Sentinels say of the monitored master.
type sentinelTopology struct {
	// Master is the master's address; Replicas those of its replicas that
	// the Sentinel does not flag as down or disconnected.
	Master   string
	Replicas []string
	// Sentinel is the Sentinel that answered.
	Sentinel string
}

// lookupMaster asks the Sentinels of cfg, in turn, for the master named
// redis.sentinel.master_name and its replicas (SENTINEL
// GET-MASTER-ADDR-BY-NAME, SENTINEL REPLICAS), and returns the first
// answer. A Sentinel that does not answer is passed over. When the
// Sentinels that answered all know no such master, it returns a
// *config.KeyError naming redis.sentinel.master_name (exit code 2); when
// one refuses the credentials, a *sentinelAuthError; when none answers, an
// error to retry on.
func lookupMaster(ctx context.Context, cfg config.RedisConfig) (sentinelTopology, error) {
	var unknown []string
	var errs []error
	for _, addr := range cfg.Addrs {
		top, err := askSentinel(ctx, cfg, addr)
		switch {
		case err == nil:
			return top, nil
		case errors.Is(err, redis.Nil):
			unknown = append(unknown, addr)
		case authError(err):
			return sentinelTopology{}, &sentinelAuthError{addr: addr, err: err}
		case ctx.Err() != nil:
			return sentinelTopology{}, errors.Join(ctx.Err(), err)
		default:
			errs = append(errs, fmt.Errorf("sentinel %s: %w", addr, err))
		}
	}
	if len(unknown) > 0 {
		return sentinelTopology{}, &config.KeyError{Key: "redis.sentinel.master_name", Msg: fmt.Sprintf(
			"no Sentinel knows a master named %q (asked %s: unknown name; check the name in their 'sentinel monitor' lines)",
			cfg.Sentinel.MasterName, strings.Join(unknown, ", "))}
	}
	return sentinelTopology{}, fmt.Errorf("no Sentinel of redis.addrs answered for master %q: %w", cfg.Sentinel.MasterName, errors.Join(errs...))
}

// askSentinel asks one Sentinel; redis.Nil means it knows no such master.
func askSentinel(ctx context.Context, cfg config.RedisConfig, addr string) (sentinelTopology, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: cfg.Sentinel.Username, Password: cfg.Sentinel.Password,
		TLSConfig: cloneTLS(cfg.TLS.Client), DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		MaxRetries: -1, DialerRetries: 1, DisableIdentity: true})
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, cfg.Sentinel.MasterName).Result()
	if err != nil {
		return sentinelTopology{}, err
	}
	if len(hp) != 2 {
		return sentinelTopology{}, fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME %s answered %q", cfg.Sentinel.MasterName, hp)
	}
	top := sentinelTopology{Master: net.JoinHostPort(hp[0], hp[1]), Sentinel: addr}
	reps, err := sc.Replicas(ctx, cfg.Sentinel.MasterName).Result()
	if err != nil {
		return sentinelTopology{}, fmt.Errorf("SENTINEL REPLICAS %s: %w", cfg.Sentinel.MasterName, err)
	}
	for _, r := range reps {
		if r["ip"] == "" || r["port"] == "" || flagged(r["flags"], "s_down", "o_down", "disconnected") {
			continue
		}
		top.Replicas = append(top.Replicas, net.JoinHostPort(r["ip"], r["port"]))
	}
	return top, nil
}

// flagged reports whether the comma-separated flags hold any of names.
func flagged(flags string, names ...string) bool {
	for _, f := range strings.Split(flags, ",") {
		for _, n := range names {
			if f == n {
				return true
			}
		}
	}
	return false
}

// CheckSentinels makes sure, in sentinel mode, that a Sentinel of
// redis.addrs names the master redis.sentinel.master_name (see
// lookupMaster for its errors); in the other modes it does nothing. The
// replayer runs it before anything else.
func CheckSentinels(ctx context.Context, cfg config.RedisConfig) error {
	if cfg.Mode != config.ModeSentinel {
		return nil
	}
	_, err := lookupMaster(ctx, cfg)
	return err
}

// TrackMaster counts, in sentinel mode, the changes of master rdb sees
// (changes: projector_redis_master_changes_total) and logs them: every
// connection the failover client makes goes to the master the Sentinels
// name at that moment, and one to another address than the connection
// before means the Sentinels promoted another server. In the other modes
// it does nothing.
func TrackMaster(rdb redis.UniversalClient, cfg config.RedisConfig, changes prometheus.Counter, log *zap.Logger) {
	if cfg.Mode != config.ModeSentinel {
		return
	}
	rdb.AddHook(&masterTracker{name: cfg.Sentinel.MasterName, changes: changes, log: log})
}

// masterTracker remembers the master the last connection went to.
type masterTracker struct {
	name    string
	changes prometheus.Counter
	log     *zap.Logger

	mu   sync.Mutex
	addr string
}

// DialHook notes the address of every new connection.
func (t *masterTracker) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			t.seen(conn.RemoteAddr().String())
		}
		return conn, err
	}
}

// ProcessHook changes nothing.
func (*masterTracker) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook changes nothing.
func (*masterTracker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// seen records a connection to addr.
func (t *masterTracker) seen(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.addr {
	case addr:
		return
	case "":
		t.log.Info("redis master found through the Sentinels", zap.String("master_name", t.name), zap.String("addr", addr))
	default:
		t.changes.Inc()
		t.log.Warn("redis master changed: the Sentinels name another server; going on with it",
			zap.String("master_name", t.name), zap.String("from", t.addr), zap.String("to", addr))
	}
	t.addr = addr
}
