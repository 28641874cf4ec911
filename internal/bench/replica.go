package bench

import (
	"context"
	"fmt"
	"os"
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
