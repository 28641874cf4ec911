package testredis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots in a Redis Cluster.
const clusterSlots = 16384

// Cluster is a Redis Cluster of master-only redis-server (or, with
// WithValkey, valkey-server) processes started by StartCluster.
type Cluster struct {
	cfg      config
	nodes    []*Server
	replicas []*Server // added by AddReplica
	client   *redis.ClusterClient
}

// StartCluster starts masters server processes with cluster-enabled
// yes (cluster-node-timeout 5000 ms unless overridden with WithArgs), each on
// a free loopback port below 55000 whose bus port (port+10000) is free too,
// each with its own directory and nodes.conf. It assigns the 16384 slots
// evenly (CLUSTER ADDSLOTSRANGE), joins the nodes (CLUSTER MEET) and waits
// until every node reports cluster_state:ok and all nodes agree on the slot
// map. There are no replicas. Everything is stopped by tb.Cleanup; failure
// fails the test.
func StartCluster(tb testing.TB, masters int, opts ...Option) *Cluster {
	tb.Helper()
	if masters < 1 || masters > clusterSlots {
		tb.Fatalf("testredis: StartCluster: masters must be in 1..%d, got %d", clusterSlots, masters)
	}
	cfg := applyOptions(opts)
	ports, err := freePorts(masters, true)
	if err != nil {
		tb.Fatalf("testredis: choose cluster ports: %v", err)
	}
	c := &Cluster{cfg: cfg}
	for _, p := range ports {
		c.nodes = append(c.nodes, startServer(tb, cfg, true, p))
	}
	ctx := context.Background()
	if err := c.form(ctx); err != nil {
		tb.Fatalf("testredis: form cluster on %v: %v", c.Addrs(), err)
	}
	if err := c.waitConverged(ctx, cfg.readyTimeout); err != nil {
		tb.Fatalf("testredis: cluster on %v did not converge: %v", c.Addrs(), err)
	}
	c.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), DisableIdentity: true})
	tb.Cleanup(func() { _ = c.client.Close() })
	return c
}

// form assigns slot ranges and config epochs and introduces every node to
// the first one.
func (c *Cluster) form(ctx context.Context) error {
	n := len(c.nodes)
	for i, node := range c.nodes {
		lo := i * clusterSlots / n
		hi := (i+1)*clusterSlots/n - 1
		cl := node.Client()
		if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE %d %d on %s: %w", lo, hi, node.Addr(), err)
		}
		// Distinct epochs avoid the slower epoch-collision resolution.
		if err := cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("CLUSTER SET-CONFIG-EPOCH on %s: %w", node.Addr(), err)
		}
	}
	first := c.nodes[0].Client()
	for _, node := range c.nodes[1:] {
		host, port, _ := strings.Cut(node.Addr(), ":")
		if err := first.ClusterMeet(ctx, host, port).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %s from %s: %w", node.Addr(), c.nodes[0].Addr(), err)
		}
	}
	return nil
}

// waitConverged polls until every node reports cluster_state:ok, knows all
// nodes, and reports the same full slot map.
func (c *Cluster) waitConverged(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.converged(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// converged reports nil when the cluster is fully formed and consistent
// (its replicas too).
func (c *Cluster) converged(ctx context.Context) error {
	var want string
	for i, node := range append(c.Nodes(), c.replicas...) {
		cl := node.Client()
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", node.Addr(), err)
		}
		fields := parseInfo(info)
		if fields["cluster_state"] != "ok" {
			return fmt.Errorf("%s: cluster_state:%s", node.Addr(), fields["cluster_state"])
		}
		if want := len(c.nodes) + len(c.replicas); fields["cluster_known_nodes"] != strconv.Itoa(want) {
			return fmt.Errorf("%s: cluster_known_nodes:%s, want %d", node.Addr(), fields["cluster_known_nodes"], want)
		}
		slots, err := cl.ClusterSlots(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER SLOTS on %s: %w", node.Addr(), err)
		}
		got, covered := slotMap(slots)
		if covered != clusterSlots {
			return fmt.Errorf("%s: %d of %d slots covered", node.Addr(), covered, clusterSlots)
		}
		if i == 0 {
			want = got
		} else if got != want {
			return fmt.Errorf("%s disagrees on the slot map: %s, first node: %s", node.Addr(), got, want)
		}
	}
	return nil
}

// parseInfo splits "key:value" lines of an INFO-style reply.
func parseInfo(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// slotMap renders a CLUSTER SLOTS reply canonically ("lo-hi=addr" sorted by
// range) and counts the slots it covers.
func slotMap(slots []redis.ClusterSlot) (string, int) {
	parts := make([]string, 0, len(slots))
	covered := 0
	sorted := append([]redis.ClusterSlot(nil), slots...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Start < sorted[j].Start })
	for _, s := range sorted {
		covered += int(s.End-s.Start) + 1
		master := "?"
		if len(s.Nodes) > 0 {
			master = s.Nodes[0].Addr
		}
		parts = append(parts, fmt.Sprintf("%d-%d=%s", s.Start, s.End, master))
	}
	return strings.Join(parts, ","), covered
}

// Addrs returns the nodes' addresses ("127.0.0.1:<port>"), in node order.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Flavor returns the nodes' implementation (Redis or Valkey).
func (c *Cluster) Flavor() Flavor { return c.nodes[0].Flavor() }

// Client returns a cluster client for all nodes; it is closed at cleanup.
func (c *Cluster) Client() *redis.ClusterClient { return c.client }

// Nodes returns the cluster's servers (all masters), so a test can pause,
// kill or restart one. Node i owns the i-th even share of the slots.
func (c *Cluster) Nodes() []*Server {
	return append([]*Server(nil), c.nodes...)
}

// Stop stops every node gracefully. Cleanup does this too.
func (c *Cluster) Stop() {
	for _, n := range c.nodes {
		n.Stop()
	}
}

// FlushAll runs FLUSHALL on every master, directly on each node.
func (c *Cluster) FlushAll(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		if err := n.Client().FlushAll(ctx).Err(); err != nil {
			errs = append(errs, fmt.Errorf("FLUSHALL on %s: %w", n.Addr(), err))
		}
	}
	return errors.Join(errs...)
}

// advanceOffset writes and deletes a key of master's slots, so that its
// replication offset moves.
func (c *Cluster) advanceOffset(ctx context.Context, master *Server) error {
	mc := master.Client()
	slots, err := mc.ClusterSlots(ctx).Result()
	if err != nil {
		return fmt.Errorf("CLUSTER SLOTS on %s: %w", master.Addr(), err)
	}
	for i := 0; i < 100000; i++ {
		key := "testredis:offset:{" + strconv.Itoa(i) + "}"
		slot, err := mc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER KEYSLOT on %s: %w", master.Addr(), err)
		}
		for _, sl := range slots {
			if int64(sl.Start) <= slot && slot <= int64(sl.End) && len(sl.Nodes) > 0 && sl.Nodes[0].Addr == master.Addr() {
				if err := mc.Set(ctx, key, "1", 0).Err(); err != nil {
					return fmt.Errorf("SET %s on %s: %w", key, master.Addr(), err)
				}
				return mc.Del(ctx, key).Err()
			}
		}
	}
	return fmt.Errorf("no key of %s's slots found", master.Addr())
}

// listsReplica reports nil when every master's CLUSTER SLOTS names r as a
// replica of master (clients learn the replicas from it).
func (c *Cluster) listsReplica(ctx context.Context, master, r *Server) error {
	for _, n := range c.nodes {
		slots, err := n.Client().ClusterSlots(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER SLOTS on %s: %w", n.Addr(), err)
		}
		for _, sl := range slots {
			if len(sl.Nodes) == 0 || sl.Nodes[0].Addr != master.Addr() {
				continue
			}
			found := false
			for _, nd := range sl.Nodes[1:] {
				found = found || nd.Addr == r.Addr()
			}
			if !found {
				return fmt.Errorf("%s does not list %s as a replica of %s yet", n.Addr(), r.Addr(), master.Addr())
			}
		}
	}
	return nil
}

// AddReplica starts one more cluster node, joins it to the cluster as a
// replica of master (a node of Nodes: CLUSTER MEET, CLUSTER REPLICATE) and
// waits until it has synced with master and every master lists it (CLUSTER
// SLOTS). It is
// stopped by tb.Cleanup; failure fails the test.
func (c *Cluster) AddReplica(tb testing.TB, master *Server) *Server {
	tb.Helper()
	ports, err := freePorts(1, true)
	if err != nil {
		tb.Fatalf("testredis: choose a replica port: %v", err)
	}
	r := startServer(tb, c.cfg, true, ports[0])
	ctx := context.Background()
	host, port, _ := strings.Cut(master.Addr(), ":")
	if err := r.Client().ClusterMeet(ctx, host, port).Err(); err != nil {
		tb.Fatalf("testredis: CLUSTER MEET %s from %s: %v", master.Addr(), r.Addr(), err)
	}
	id, err := master.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		tb.Fatalf("testredis: CLUSTER MYID on %s: %v", master.Addr(), err)
	}
	c.replicas = append(c.replicas, r)
	deadline := time.Now().Add(c.cfg.readyTimeout)
	for {
		err := r.Client().Do(ctx, "CLUSTER", "REPLICATE", id).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("testredis: CLUSTER REPLICATE %s on %s: %v", id, r.Addr(), err)
		}
		time.Sleep(50 * time.Millisecond) // the node learns of the master by gossip
	}
	// A master lists a replica once the replica reported a replication
	// offset above 0, which takes a write on a master that had none (or its
	// next PING to the replicas, 10 s later).
	if err := c.advanceOffset(ctx, master); err != nil {
		tb.Fatalf("testredis: %v", err)
	}
	for {
		info, err := r.Client().Info(ctx, "replication").Result()
		if err == nil && parseInfo(info)["master_link_status"] == "up" {
			if err = c.converged(ctx); err == nil {
				if err = c.listsReplica(ctx, master, r); err == nil {
					return r
				}
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("testredis: replica %s of %s not ready after %s: %v", r.Addr(), master.Addr(), c.cfg.readyTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
