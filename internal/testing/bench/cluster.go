package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// form assigns the slots evenly, joins the nodes and waits for cluster_state:ok.
func (r *Redis) form(ctx context.Context) error {
	n := len(r.addrs)
	first := redis.NewClient(&redis.Options{Addr: r.addrs[0]})
	defer first.Close()
	for i, a := range r.addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		err := c.ClusterAddSlotsRange(ctx, i*16384/n, (i+1)*16384/n-1).Err()
		if err == nil {
			err = c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		}
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("cluster slots on %s: %w", a, err)
		}
		if i > 0 {
			host, port, _ := strings.Cut(a, ":")
			if err := first.ClusterMeet(ctx, host, port).Err(); err != nil {
				return fmt.Errorf("cluster meet %s: %w", a, err)
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		_ = r.each(ctx, func(c *redis.Client) error {
			f := infoFields(c.ClusterInfo(ctx).Val())
			ok = ok && f["cluster_state"] == "ok" && f["cluster_known_nodes"] == strconv.Itoa(n)
			return nil
		})
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("redis cluster did not converge in 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort returns a free loopback port (below 55000 with a free bus port
// +10000 for cluster nodes).
func freePort(cluster bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !cluster {
			return port, nil
		}
		if port >= 55000 {
			continue
		}
		if b, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); err == nil {
			_ = b.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port found")
}
