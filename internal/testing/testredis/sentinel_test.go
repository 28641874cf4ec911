package testredis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSentinel: on each flavor, a master, a replica and three Sentinels
// requiring a password; a go-redis failover client writes through the
// master the Sentinels name; the master is killed and the replica
// promoted; the old master comes back as a replica and a planned
// failover promotes it again; the client follows both without a restart.
func TestSentinel(t *testing.T) {
	for _, f := range Flavors() {
		t.Run(string(f), func(t *testing.T) {
			s := StartSentinel(t, 1, WithFlavor(f), WithSentinelPassword("watch"))
			ctx := context.Background()
			if s.Flavor() != f || len(s.Addrs()) != 3 || len(s.Nodes()) != 2 {
				t.Fatalf("flavor %s, %d Sentinels, %d data nodes", s.Flavor(), len(s.Addrs()), len(s.Nodes()))
			}
			for _, n := range s.Nodes() {
				if err := checkFlavor(ctx, n, f); err != nil {
					t.Fatalf("node %s: %v", n.Addr(), err)
				}
			}
			first, replica := s.Nodes()[0], s.Nodes()[1]
			if m, err := s.Master(ctx); err != nil || m != first {
				t.Fatalf("Master() = %v, %v; want the first node %s", m, err, first.Addr())
			}
			if err := s.sentinelClient(0).Do(ctx, "SENTINEL", "MASTERS").Err(); err != nil {
				t.Fatalf("SENTINEL MASTERS with the password: %v", err)
			}
			rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.Addrs(),
				SentinelPassword: "watch", DisableIdentity: true})
			t.Cleanup(func() { _ = rdb.Close() })
			set := func(v string) {
				t.Helper()
				deadline := time.Now().Add(30 * time.Second)
				for {
					err := rdb.Set(ctx, "k", v, 0).Err()
					if err == nil {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("SET k %s through the Sentinels: %v", v, err)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			set("1")
			s.WaitSynced(t, first, replica)

			start := time.Now()
			first.Kill()
			if m := s.WaitMaster(t, first, 30*time.Second); m != replica {
				t.Fatalf("promoted %s, want the replica %s", m.Addr(), replica.Addr())
			}
			t.Logf("%s: the replica was promoted %s after the kill", f, time.Since(start).Round(time.Millisecond))
			set("2")
			if v, err := replica.Client().Get(ctx, "k").Result(); err != nil || v != "2" {
				t.Fatalf("the write after the failover on %s: %q, %v", replica.Addr(), v, err)
			}

			first.Restart(t)
			s.ReplicaOf(t, first, replica)
			start = time.Now()
			if m := s.Failover(t, 30*time.Second); m != first {
				t.Fatalf("the planned failover promoted %s, want %s", m.Addr(), first.Addr())
			}
			t.Logf("%s: planned failover in %s", f, time.Since(start).Round(time.Millisecond))
			set("3")
			if v, err := first.Client().Get(ctx, "k").Result(); err != nil || v != "3" {
				t.Fatalf("the write after the planned failover on %s: %q, %v", first.Addr(), v, err)
			}
		})
	}
}
