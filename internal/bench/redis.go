// Package bench runs projector's benchmark (cmd/bench): it starts real
// redis-server and Apache Kafka processes on loopback without the testing
// package, loads generated traffic, drives the consumer, replayer and naive
// baseline, and measures throughput, CPU and latency.
package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a set of redis-server processes: one standalone server, or the
// masters of a cluster.
type Redis struct {
	Cluster bool
	addrs   []string
	procs   []*exec.Cmd
	client  redis.UniversalClient
}

// StartRedis starts one standalone redis-server (masters 0) or a cluster of
// masters nodes on free loopback ports, with files under dir and no persistence.
func StartRedis(ctx context.Context, dir string, masters int, extra ...string) (*Redis, error) {
	r := &Redis{Cluster: masters > 0}
	n := max(masters, 1)
	for i := range n {
		port, err := freePort(r.Cluster)
		if err != nil {
			return r, err
		}
		nd := filepath.Join(dir, "redis-"+strconv.Itoa(i))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return r, fmt.Errorf("redis dir: %w", err)
		}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", nd, "--save", "",
			"--appendonly", "no", "--protected-mode", "no", "--logfile", filepath.Join(nd, "redis.log")}
		args = append(args, extra...)
		if r.Cluster {
			args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(nd, "nodes.conf"))
		}
		cmd := exec.Command("redis-server", args...)
		if err := cmd.Start(); err != nil {
			return r, fmt.Errorf("start redis-server (is it installed?): %w", err)
		}
		r.procs = append(r.procs, cmd)
		r.addrs = append(r.addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	for _, a := range r.addrs {
		if err := waitPing(ctx, a); err != nil {
			return r, err
		}
	}
	if r.Cluster {
		if err := r.form(ctx); err != nil {
			return r, err
		}
		r.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.addrs})
	} else {
		r.client = redis.NewClient(&redis.Options{Addr: r.addrs[0]})
	}
	return r, nil
}

// Addrs returns the servers' addresses.
func (r *Redis) Addrs() []string { return r.addrs }

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

// each runs f on a client of every server.
func (r *Redis) each(ctx context.Context, f func(c *redis.Client) error) error {
	for _, a := range r.addrs {
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

// CPUSeconds sums used_cpu_sys and used_cpu_user (INFO cpu) over the servers.
func (r *Redis) CPUSeconds(ctx context.Context) (float64, error) {
	var total float64
	err := r.each(ctx, func(c *redis.Client) error {
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
