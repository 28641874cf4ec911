// Package bench runs projector's benchmark (cmd/bench): it starts real
// redis-server and Apache Kafka processes on loopback without the testing
// package, loads generated traffic, drives the consumer, replayer and naive
// baseline, and measures throughput, CPU and latency.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a set of redis-server (or valkey-server) processes: one
// standalone server with its replicas, or the masters of a cluster.
type Redis struct {
	Cluster   bool
	addrs     []string // the masters
	replicas  []string
	sentinels []string // Sentinels monitoring the standalone master as SentinelMaster
	procs     []*exec.Cmd
	client    redis.UniversalClient
}

// SentinelMaster is the name the Sentinels of RedisOptions.Sentinels
// monitor the standalone master under.
const SentinelMaster = "bench"

// RedisOptions says which servers StartRedis starts.
type RedisOptions struct {
	// Server is the server executable (empty: redis-server on PATH).
	Server string
	// Masters > 0 forms a Redis Cluster of that many masters; 0 starts one
	// standalone server.
	Masters int
	// Replicas of the standalone server (REPLICAOF); StartRedis returns once
	// each has completed its initial sync.
	Replicas int
	// AOF is the appendfsync policy of every server's append-only file
	// ("everysec", "always"); empty leaves the append-only file off.
	AOF string
	// Args are extra server arguments (e.g. --hash-max-listpack-entries 16).
	Args []string
	// Sentinel starts three Sentinels (the server binary with --sentinel)
	// monitoring the standalone server, and the consumer, replayer and peer
	// reach it through them (redis.mode sentinel).
	Sentinel bool
}

// StartRedis starts the servers o describes on free loopback ports, with
// files under dir and no RDB snapshots.
func StartRedis(ctx context.Context, dir string, o RedisOptions) (*Redis, error) {
	r := &Redis{Cluster: o.Masters > 0}
	if r.Cluster && (o.Replicas > 0 || o.Sentinel) {
		return r, errors.New("replicas and Sentinels are supported on a standalone server only")
	}
	for i := range max(o.Masters, 1) + o.Replicas {
		nd := filepath.Join(dir, "redis-"+strconv.Itoa(i))
		var role []string
		if r.Cluster {
			role = []string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(nd, "nodes.conf")}
		} else if i > 0 {
			host, port, _ := strings.Cut(r.addrs[0], ":")
			role = []string{"--replicaof", host, port}
		}
		addr, err := r.start(nd, o, role)
		if err != nil {
			return r, err
		}
		if r.Cluster || i == 0 {
			r.addrs = append(r.addrs, addr)
		} else {
			r.replicas = append(r.replicas, addr)
		}
	}
	for _, a := range slices.Concat(r.addrs, r.replicas) {
		if err := waitPing(ctx, a); err != nil {
			return r, err
		}
	}
	if r.Cluster {
		if err := r.form(ctx); err != nil {
			return r, err
		}
		r.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.addrs})
		return r, nil
	}
	r.client = redis.NewClient(&redis.Options{Addr: r.addrs[0]})
	if err := r.waitReplicas(ctx); err != nil {
		return r, err
	}
	if o.Sentinel {
		return r, r.startSentinels(ctx, dir, o)
	}
	return r, nil
}

// start runs one server with its files in dir and returns its address.
func (r *Redis) start(dir string, o RedisOptions, role []string) (string, error) {
	port, err := freePort(r.Cluster)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("redis dir: %w", err)
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--protected-mode", "no", "--logfile", filepath.Join(dir, "redis.log")}
	if o.AOF != "" {
		args = append(args, "--appendonly", "yes", "--appendfsync", o.AOF)
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(append(args, role...), o.Args...)
	bin := cmp.Or(o.Server, "redis-server")
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s (is it installed?): %w", bin, err)
	}
	r.procs = append(r.procs, cmd)
	return "127.0.0.1:" + strconv.Itoa(port), nil
}

// Addrs returns the masters' addresses.
func (r *Redis) Addrs() []string { return r.addrs }

// Sentinels returns the addresses of the Sentinels (none unless
// RedisOptions.Sentinel).
func (r *Redis) Sentinels() []string { return r.sentinels }

// Client returns a client for the whole deployment.
func (r *Redis) Client() redis.UniversalClient { return r.client }

// Stop terminates the servers.
func (r *Redis) Stop() {
	if r.client != nil {
		_ = r.client.Close()
	}
	for _, p := range r.procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
}

// each runs f on a client of every master.
func (r *Redis) each(ctx context.Context, f func(c *redis.Client) error) error {
	return eachOf(r.addrs, f)
}

// eachOf runs f on a client of every server of addrs.
func eachOf(addrs []string, f func(c *redis.Client) error) error {
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		err := f(c)
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("redis %s: %w", a, err)
		}
	}
	return nil
}

// FlushAll empties every server.
func (r *Redis) FlushAll(ctx context.Context) error {
	return r.each(ctx, func(c *redis.Client) error { return c.FlushAll(ctx).Err() })
}

// ResetStats resets INFO commandstats on every server.
func (r *Redis) ResetStats(ctx context.Context) error {
	return r.each(ctx, func(c *redis.Client) error { return c.ConfigResetStat(ctx).Err() })
}

// CPUSeconds sums used_cpu_sys and used_cpu_user (INFO cpu) over the masters.
func (r *Redis) CPUSeconds(ctx context.Context) (float64, error) {
	return cpuSeconds(ctx, r.addrs)
}

// ReplicaCPUSeconds sums used_cpu_sys and used_cpu_user over the replicas.
func (r *Redis) ReplicaCPUSeconds(ctx context.Context) (float64, error) {
	return cpuSeconds(ctx, r.replicas)
}

// cpuSeconds sums used_cpu_sys and used_cpu_user over the servers of addrs.
func cpuSeconds(ctx context.Context, addrs []string) (float64, error) {
	var total float64
	err := eachOf(addrs, func(c *redis.Client) error {
		f, err := infoOf(ctx, c, "cpu")
		if err != nil {
			return err
		}
		v, err := cpuOf(f)
		total += v
		return err
	})
	return total, err
}

// cpuOf is used_cpu_sys + used_cpu_user of INFO cpu's fields, in seconds.
func cpuOf(f map[string]string) (float64, error) {
	var total float64
	for _, k := range []string{"used_cpu_sys", "used_cpu_user"} {
		v, err := strconv.ParseFloat(f[k], 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu %s=%q: %w", k, f[k], err)
		}
		total += v
	}
	return total, nil
}

// UsedMemory sums used_memory (INFO memory) over the servers, in bytes.
func (r *Redis) UsedMemory(ctx context.Context) (int64, error) {
	var total int64
	err := r.each(ctx, func(c *redis.Client) error {
		f, err := infoOf(ctx, c, "memory")
		if err != nil {
			return err
		}
		v, err := strconv.ParseInt(f["used_memory"], 10, 64)
		if err != nil {
			return fmt.Errorf("INFO memory used_memory=%q: %w", f["used_memory"], err)
		}
		total += v
		return nil
	})
	return total, err
}

// CommandStats sums INFO commandstats calls and usec per command over the servers.
func (r *Redis) CommandStats(ctx context.Context) (map[string]CommandStat, error) {
	out := map[string]CommandStat{}
	err := r.each(ctx, func(c *redis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		for k, v := range infoFields(info) {
			name, ok := strings.CutPrefix(k, "cmdstat_")
			if !ok {
				continue
			}
			s := out[name]
			for _, part := range strings.Split(v, ",") {
				pk, pv, _ := strings.Cut(part, "=")
				n, _ := strconv.ParseFloat(pv, 64)
				switch pk {
				case "calls":
					s.Calls += int64(n)
				case "usec":
					s.Usec += int64(n)
				}
			}
			out[name] = s
		}
		return nil
	})
	return out, err
}

// CommandStat is one command's INFO commandstats figures.
type CommandStat struct {
	Calls, Usec int64
}

// Busiest returns the names of cmds, the most time first.
func Busiest(cmds map[string]CommandStat) []string {
	names := make([]string, 0, len(cmds))
	for name := range cmds {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return cmds[names[i]].Usec > cmds[names[j]].Usec })
	return names
}

// TopCommands formats the k busiest commands of cmds per event over n
// events: "name calls/ev us/ev, ...".
func TopCommands(cmds map[string]CommandStat, n float64, k int) string {
	names := Busiest(cmds)
	var parts []string
	for _, name := range names[:min(k, len(names))] {
		s := cmds[name]
		parts = append(parts, fmt.Sprintf("%s %.3f %.3f", name, float64(s.Calls)/max(n, 1), float64(s.Usec)/max(n, 1)))
	}
	return strings.Join(parts, ", ")
}

// infoOf reads one INFO section of c as fields.
func infoOf(ctx context.Context, c *redis.Client, section string) (map[string]string, error) {
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	return infoFields(info), nil
}

// infoFields parses "k:v" lines of an INFO reply.
func infoFields(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// waitPing waits up to 10s until the server at addr answers PING.
func waitPing(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s not answering: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
