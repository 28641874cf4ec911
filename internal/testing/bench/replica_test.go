package bench

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestStartRedisReplicaAndAOF starts a standalone master with one replica and
// the append-only file on, on redis-server and on valkey-server: the replica
// is synced when StartRedis returns, a write reaches it (WAIT 1 answers 1),
// every server runs the asked appendfsync, and the master is the asked binary.
func TestStartRedisReplicaAndAOF(t *testing.T) {
	for _, tc := range []struct{ server, versionField string }{{"redis", "redis_version"}, {"valkey", "valkey_version"}} {
		t.Run(tc.server, func(t *testing.T) {
			ctx := context.Background()
			bin, err := ServerBinary(tc.server, filepath.Join("..", "..", ".."))
			if err != nil {
				t.Fatal(err)
			}
			r, err := StartRedis(ctx, t.TempDir(), RedisOptions{Server: bin, Replicas: 1, AOF: "always"})
			defer r.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Addrs()) != 1 || len(r.replicas) != 1 {
				t.Fatalf("masters %v replicas %v, want one of each", r.Addrs(), r.replicas)
			}
			f, err := infoOf(ctx, r.Client().(*redis.Client), "server")
			if err != nil || f[tc.versionField] == "" {
				t.Fatalf("INFO server has no %s (%v)", tc.versionField, err)
			}
			if err := r.Client().Set(ctx, "px:bench-replica", "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if n, err := r.Client().Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
				t.Fatalf("WAIT 1 = %d, %v; want 1", n, err)
			}
			err = eachOf(slices.Concat(r.Addrs(), r.replicas), func(c *redis.Client) error {
				cfg := c.ConfigGet(ctx, "append*").Val()
				if cfg["appendonly"] != "yes" || cfg["appendfsync"] != "always" {
					t.Errorf("%s: appendonly=%q appendfsync=%q, want yes and always", c.Options().Addr, cfg["appendonly"], cfg["appendfsync"])
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			rep := redis.NewClient(&redis.Options{Addr: r.replicas[0]})
			defer rep.Close()
			if v := rep.Get(ctx, "px:bench-replica").Val(); v != "1" {
				t.Errorf("replica holds %q, want the master's write 1", v)
			}
			if _, err := r.ReplicaCPUSeconds(ctx); err != nil {
				t.Errorf("replica CPU: %v", err)
			}
		})
	}
}

func TestStartRedisRefusesReplicasOfACluster(t *testing.T) {
	r, err := StartRedis(context.Background(), t.TempDir(), RedisOptions{Masters: 3, Replicas: 1})
	defer r.Stop()
	if err == nil || !strings.Contains(err.Error(), "standalone") {
		t.Errorf("err = %v, want replicas refused on a cluster", err)
	}
}

func TestOnlineReplicas(t *testing.T) {
	f := infoFields("connected_slaves:2\r\nslave0:ip=127.0.0.1,port=1,state=online,offset=5,lag=0\r\nslave1:ip=127.0.0.1,port=2,state=wait_bgsave,offset=0,lag=0\r\n")
	if n := onlineReplicas(f); n != 1 {
		t.Errorf("online = %d, want 1", n)
	}
}
