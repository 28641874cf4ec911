package testredis

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestCluster(t *testing.T) {
	for _, f := range Flavors() {
		t.Run(string(f), func(t *testing.T) { testCluster(t, f) })
	}
}

// testCluster checks a 3-master cluster of flavor f.
func testCluster(t *testing.T, f Flavor) {
	c := StartCluster(t, 3, WithFlavor(f))
	ctx := context.Background()
	if c.Flavor() != f {
		t.Fatalf("Flavor() = %s, want %s", c.Flavor(), f)
	}
	for _, n := range c.Nodes() {
		if err := checkFlavor(ctx, n, f); err != nil {
			t.Fatalf("node %s: %v", n.Addr(), err)
		}
	}
	if n := len(c.Nodes()); n != 3 {
		t.Fatalf("Nodes() has %d servers, want 3", n)
	}
	if n := len(c.Addrs()); n != 3 {
		t.Fatalf("Addrs() has %d addresses, want 3", n)
	}

	t.Run("all slots covered", func(t *testing.T) {
		slots, err := c.Client().ClusterSlots(ctx).Result()
		if err != nil {
			t.Fatalf("CLUSTER SLOTS: %v", err)
		}
		covered := make([]bool, clusterSlots)
		owners := map[string]bool{}
		for _, s := range slots {
			for i := s.Start; i <= s.End; i++ {
				covered[i] = true
			}
			owners[s.Nodes[0].Addr] = true
		}
		for i, ok := range covered {
			if !ok {
				t.Fatalf("slot %d not covered", i)
			}
		}
		if len(owners) != 3 {
			t.Fatalf("slots owned by %d nodes, want 3", len(owners))
		}
	})

	t.Run("writes to three hash tags on three nodes", func(t *testing.T) {
		cl := c.Client()
		// Find one hash tag per node so the test really spans all masters.
		tags := tagPerNode(t, ctx, cl)
		for _, tag := range tags {
			key := "k:{" + tag + "}"
			if err := cl.Set(ctx, key, tag, 0).Err(); err != nil {
				t.Fatalf("SET %s: %v", key, err)
			}
			if got, err := cl.Get(ctx, key).Result(); err != nil || got != tag {
				t.Fatalf("GET %s = %q, %v", key, got, err)
			}
		}
		// Each key lives on a different node's own keyspace.
		total := int64(0)
		for _, n := range c.Nodes() {
			size, err := n.Client().DBSize(ctx).Result()
			if err != nil {
				t.Fatalf("DBSIZE on %s: %v", n.Addr(), err)
			}
			if size != 1 {
				t.Errorf("node %s holds %d keys, want 1", n.Addr(), size)
			}
			total += size
		}
		if total != 3 {
			t.Fatalf("cluster holds %d keys, want 3", total)
		}
	})

	t.Run("EVAL on two keys with one hash tag", func(t *testing.T) {
		cl := c.Client()
		script := redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1])
redis.call('INCRBY', KEYS[2], ARGV[2])
return redis.call('GET', KEYS[2])`)
		got, err := script.Run(ctx, cl, []string{"a:{u:42}", "b:{u:42}"}, "x", 5).Text()
		if err != nil || got != "5" {
			t.Fatalf("script = %q, %v; want \"5\"", got, err)
		}
		if v, err := cl.Get(ctx, "a:{u:42}").Result(); err != nil || v != "x" {
			t.Fatalf("GET a:{u:42} = %q, %v", v, err)
		}
		// Keys in different slots are rejected: the cluster really checks.
		err = script.Run(ctx, cl, []string{"a:{u:1}", "b:{u:2}"}, "x", 1).Err()
		if err == nil {
			t.Fatal("script over two slots succeeded, want CROSSSLOT error")
		}
	})

	t.Run("FlushAll empties every node", func(t *testing.T) {
		if err := c.FlushAll(ctx); err != nil {
			t.Fatalf("FlushAll: %v", err)
		}
		for _, n := range c.Nodes() {
			if size, err := n.Client().DBSize(ctx).Result(); err != nil || size != 0 {
				t.Fatalf("DBSIZE on %s after FlushAll = %d, %v", n.Addr(), size, err)
			}
		}
	})
}

func TestClusterNodeRestartRejoins(t *testing.T) {
	c := StartCluster(t, 3)
	ctx := context.Background()
	node := c.Nodes()[1]
	node.Stop()
	node.Restart(t)
	if err := c.waitConverged(ctx, defaultConfig().readyTimeout); err != nil {
		t.Fatalf("cluster after node restart: %v", err)
	}
	tags := tagPerNode(t, ctx, c.Client())
	for _, tag := range tags {
		if err := c.Client().Set(ctx, "{"+tag+"}", "1", 0).Err(); err != nil {
			t.Fatalf("SET {%s} after restart: %v", tag, err)
		}
	}
}

// tagPerNode returns hash tags whose slots belong to distinct nodes, one per
// master.
func tagPerNode(t *testing.T, ctx context.Context, cl *redis.ClusterClient) []string {
	t.Helper()
	slots, err := cl.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	owner := func(slot int64) string {
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) {
				return s.Nodes[0].Addr
			}
		}
		return ""
	}
	byNode := map[string]string{}
	for i := 0; i < 1000 && len(byNode) < 3; i++ {
		tag := fmt.Sprintf("u:%d", i)
		slot, err := cl.ClusterKeySlot(ctx, tag).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		if o := owner(slot); o != "" && byNode[o] == "" {
			byNode[o] = tag
		}
	}
	if len(byNode) != 3 {
		t.Fatalf("found hash tags for %d nodes, want 3", len(byNode))
	}
	tags := make([]string, 0, 3)
	for _, tag := range byNode {
		tags = append(tags, tag)
	}
	return tags
}
