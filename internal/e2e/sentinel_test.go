package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/testing/testredis"
)

// Redis behind Sentinel (redis.mode sentinel): a master, a replica and three
// Sentinels (down-after-milliseconds 1000, failover-timeout 3000).

// TestSentinelFailover: consumers in front of the Sentinels, production
// running. Round 1: the replica is frozen (SIGSTOP, its link cut) while the
// consumers apply and commit more batches on the master, the master is
// killed (SIGKILL), the replica resumed (SIGCONT) and promoted by the
// Sentinels: it went back in time. Round 2: the killed master comes back as
// a replica of the new one, and a planned failover (SENTINEL FAILOVER)
// promotes it again. The consumers are never restarted: they find each new
// master through the Sentinels, count both changes, repair what the
// promoted replica had lost, and every key and TTL equals the model; each
// poison record is dead-lettered once.
func TestSentinelFailover(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		s := testredis.StartSentinel(t, 1, testredis.WithFlavor(fl))
		ctx := context.Background()
		first, second := s.Nodes()[0], s.Nodes()[1]
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.Addrs(), DisableIdentity: true})
		t.Cleanup(func() { _ = rdb.Close() })
		round := 0
		runRollback(t, rollbackCase{mode: "sentinel", rounds: 2, minRollbacks: 1, addrs: s.Addrs(), rdb: rdb,
			env: []string{"PROJECTOR_REDIS_SENTINEL_MASTER_NAME=" + s.MasterName()},
			before: func(t *testing.T) {
				round++
				if round == 1 {
					s.WaitSynced(t, first, second)
					second.Pause()
					must(t, first.Client().Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err())
					return
				}
				first.Restart(t) // empty: no persistence
				s.ReplicaOf(t, first, second)
			},
			incident: func(t *testing.T) []string {
				start := time.Now()
				if round == 1 {
					first.Kill()
					second.Resume()
					s.WaitMaster(t, first, time.Minute)
					t.Logf("the lagging replica %s was promoted %s after the master was killed", second.Addr(), time.Since(start).Round(time.Millisecond))
					return nil
				}
				s.Failover(t, time.Minute)
				t.Logf("planned failover back to %s in %s", first.Addr(), time.Since(start).Round(time.Millisecond))
				return nil
			},
			check: func(t *testing.T, httpAddrs []string) {
				for _, h := range httpAddrs {
					if n := metricValue(h, "projector_redis_master_changes_total"); n < 2 {
						t.Errorf("consumer %s: projector_redis_master_changes_total %v, want at least 2 (a failover and a switchover)", h, n)
					}
				}
			}})
	})
}

// TestSentinelStartAndReplicaReads: with one of the three Sentinels down
// the consumer, the replayer and the read API start; a master name no
// Sentinel knows stops each of them with exit code 2 and one line naming
// redis.sentinel.master_name; the consumer applies a generated log with
// redis.wait.replicas 1 (WAIT on the master the Sentinels name) and every
// key equals the model; the read API with redis.read_from replicas answers
// from the replica while the master is frozen (SIGSTOP), and the replica's
// commandstats count the reads.
func TestSentinelStartAndReplicaReads(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		s := testredis.StartSentinel(t, 1, testredis.WithFlavor(fl))
		ctx := context.Background()
		master, replica := s.Nodes()[0], s.Nodes()[1]
		s.SentinelServers()[2].Stop()
		brokers := startKafka(t, 2, []string{"shop.views", "shop.clicks", "shop.orders"}, "shop.dlq")
		env := func(name string, more ...string) []string {
			return append([]string{"PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_ADDRS=" + strings.Join(s.Addrs(), ","),
				"PROJECTOR_REDIS_SENTINEL_MASTER_NAME=" + name, "PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
				"PROJECTOR_LOG_FORMAT=json"}, more...)
		}

		for _, bin := range []string{consumerBin, replayerBin, apiBin} {
			name := filepath.Base(bin)
			p := startProcess(t, bin, env("nosuchmaster", "PROJECTOR_HTTP_ADDR="+freeAddr(t)))
			if code := p.exitCode(t, time.Minute); code != 2 {
				t.Fatalf("%s with a wrong master name: exit code %d, want 2:\n%s", name, code, tail(p.log.String(), 3000))
			}
			want := `config: redis.sentinel.master_name: no Sentinel knows a master named "nosuchmaster"`
			var lines []string
			for _, l := range strings.Split(p.log.String(), "\n") {
				if strings.Contains(l, "master_name") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
				t.Fatalf("%s with a wrong master name: lines %q, want one starting with %q:\n%s", name, lines, want, tail(p.log.String(), 3000))
			}
		}

		consAddr := freeAddr(t)
		cons := startConsumer(t, env(s.MasterName(), "PROJECTOR_HTTP_ADDR="+consAddr, "PROJECTOR_REDIS_WAIT_REPLICAS=1",
			"PROJECTOR_BATCH_MAX_EVENTS=100"))
		waitHTTP(t, "http://"+consAddr+"/readyz", http.StatusOK, "ready")
		start := time.Now()
		log := generate(t, start, 24*time.Hour, 1500)
		done := make(chan error, 1)
		produce(ctx, brokers, log, 100, 10*time.Millisecond, done)
		must(t, <-done)
		if err := waitCaughtUp(brokers, "projector", []string{"shop.views", "shop.clicks", "shop.orders"}, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.Addrs(), DisableIdentity: true})
		t.Cleanup(func() { _ = rdb.Close() })
		checkModel(t, rdb, log, start)
		waits, err := master.Client().Info(ctx, "commandstats").Result()
		must(t, err)
		if !strings.Contains(waits, "cmdstat_wait:calls=") {
			t.Fatalf("redis.wait.replicas 1: the master ran no WAIT:\n%s", waits)
		}
		rp := startProcess(t, replayerBin, env(s.MasterName()), "--projections", "trending", "--wipe", "--dry-run")
		if code := rp.exitCode(t, time.Minute); code != 0 {
			t.Fatalf("replayer --dry-run with a Sentinel down: exit code %d:\n%s", code, tail(rp.log.String(), 3000))
		}

		apiAddr := freeAddr(t)
		api := startProcess(t, apiBin, env(s.MasterName(), "PROJECTOR_HTTP_ADDR="+apiAddr, "PROJECTOR_REDIS_READ_FROM=replicas"))
		waitHTTP(t, "http://"+apiAddr+"/readyz", http.StatusOK, "ready")
		ts := time.Now().Add(-time.Minute).UnixMilli()
		must(t, master.Client().ZAdd(ctx, "lv:{u:api-reader}", redis.Z{Score: float64(ts), Member: "p1"}).Err())
		s.WaitSynced(t, master, replica)
		must(t, replica.Client().ConfigResetStat(ctx).Err())
		master.Pause()
		body := waitHTTP(t, "http://"+apiAddr+"/api/last-viewed?user=api-reader", http.StatusOK, `"product_id":"p1","ts":`+strconv.FormatInt(ts, 10))
		master.Resume()
		stats, err := replica.Client().Info(ctx, "commandstats").Result()
		must(t, err)
		if !strings.Contains(stats, "cmdstat_zrange:calls=") {
			t.Fatalf("the replica ran no ZRANGE for %s:\n%s", body, stats)
		}
		api.term(t)
		cons.term(t)
	})
}
