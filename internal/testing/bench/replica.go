package bench

import (
	"cmp"
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

// waitReplicas waits up to 30s until the standalone master counts every
// replica online and each replica has its link up and its initial sync done.
func (r *Redis) waitReplicas(ctx context.Context) error {
	if len(r.replicas) == 0 {
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := r.replicasSynced(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replicas not synced after 30s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replicasSynced returns nil when the replication is up (see waitReplicas),
// else what is missing.
func (r *Redis) replicasSynced(ctx context.Context) error {
	var online int
	err := r.each(ctx, func(c *redis.Client) error {
		f, err := infoOf(ctx, c, "replication")
		if err != nil {
			return err
		}
		online = onlineReplicas(f)
		return nil
	})
	if err != nil {
		return err
	}
	if online != len(r.replicas) {
		return fmt.Errorf("master %s has %d of %d replicas online", r.addrs[0], online, len(r.replicas))
	}
	return eachOf(r.replicas, func(c *redis.Client) error {
		f, err := infoOf(ctx, c, "replication")
		if err != nil {
			return err
		}
		if f["master_link_status"] != "up" || f["master_sync_in_progress"] != "0" {
			return fmt.Errorf("master_link_status=%q master_sync_in_progress=%q", f["master_link_status"], f["master_sync_in_progress"])
		}
		return nil
	})
}

// onlineReplicas counts the slaveN lines of a master's INFO replication
// fields whose state is online.
func onlineReplicas(f map[string]string) int {
	n, _ := strconv.Atoi(f["connected_slaves"])
	online := 0
	for i := range n {
		if strings.Contains(","+f["slave"+strconv.Itoa(i)]+",", ",state=online,") {
			online++
		}
	}
	return online
}

// ServerBinary resolves the -server flag of cmd/bench: "redis" is
// redis-server on PATH; "valkey" is $PROJECTOR_VALKEY_SERVER, else the
// valkey-server that scripts/testenv/valkey.sh fetch puts into
// $PROJECTOR_TESTENV_DIR (default <repo>/.testenv)/valkey/bin; anything else
// is the path of a server executable.
func ServerBinary(name, repo string) (string, error) {
	switch name {
	case "", "redis":
		return "redis-server", nil
	case "valkey":
		if p := os.Getenv("PROJECTOR_VALKEY_SERVER"); p != "" {
			return p, nil
		}
		env := os.Getenv("PROJECTOR_TESTENV_DIR")
		if env == "" {
			env = filepath.Join(repo, ".testenv")
		}
		p := filepath.Join(env, "valkey", "bin", "valkey-server")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("valkey-server missing (run scripts/testenv/valkey.sh fetch): %w", err)
		}
		return p, nil
	default:
		return name, nil
	}
}

// startSentinels starts three Sentinels monitoring the standalone master
// (quorum 2), with their files under dir, and waits up to 30s until each
// knows the replicas and the two other Sentinels.
func (r *Redis) startSentinels(ctx context.Context, dir string, o RedisOptions) error {
	host, port, _ := strings.Cut(r.addrs[0], ":")
	for i := range 3 {
		sd := filepath.Join(dir, "sentinel-"+strconv.Itoa(i))
		if err := os.MkdirAll(sd, 0o755); err != nil {
			return fmt.Errorf("sentinel dir: %w", err)
		}
		p, err := freePort(false)
		if err != nil {
			return err
		}
		conf := filepath.Join(sd, "sentinel.conf")
		lines := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nprotected-mode no\nsentinel monitor %s %s %s 2\n"+
			"sentinel down-after-milliseconds %s 5000\nsentinel failover-timeout %s 10000\n",
			p, sd, filepath.Join(sd, "sentinel.log"), SentinelMaster, host, port, SentinelMaster, SentinelMaster)
		if err := os.WriteFile(conf, []byte(lines), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", conf, err)
		}
		cmd := exec.Command(cmp.Or(o.Server, "redis-server"), conf, "--sentinel")
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start a Sentinel: %w", err)
		}
		r.procs = append(r.procs, cmd)
		r.sentinels = append(r.sentinels, "127.0.0.1:"+strconv.Itoa(p))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := r.sentinelsReady(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sentinels not ready after 30s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sentinelsReady returns nil when every Sentinel knows the master, its
// replicas and the other Sentinels, else what is missing.
func (r *Redis) sentinelsReady(ctx context.Context) error {
	for _, a := range r.sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: a})
		m, err := c.Master(ctx, SentinelMaster).Result()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", a, err)
		}
		if m["num-slaves"] != strconv.Itoa(len(r.replicas)) || m["num-other-sentinels"] != strconv.Itoa(len(r.sentinels)-1) {
			return fmt.Errorf("sentinel %s knows %s replicas and %s other Sentinels", a, m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return nil
}
