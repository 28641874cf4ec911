package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/gen"
	"projector/internal/testing/testkafka"
	"projector/internal/testing/testredis"
)

// Redis going back in time while consumers run and production goes on: each
// test lets the consumers apply and commit records after Redis's older state
// was taken, brings that state back, and requires every key (and TTL) to
// equal the model at the end, the dead-letter topic to hold each poison
// record once, and the consumers to have counted the rollbacks.

// TestRollbackRDB: redis-server restarts from an RDB snapshot (SAVE, more
// records applied and committed, kill -9, start again) twice in one run,
// with a real Apache Kafka broker.
func TestRollbackRDB(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		srv := testredis.StartStandalone(t, testredis.WithFlavor(fl))
		runRollback(t, rollbackCase{realKafka: true, rounds: 2, addrs: []string{srv.Addr()}, rdb: srv.Client(),
			before: func(t *testing.T) { must(t, srv.Client().Save(context.Background()).Err()) },
			incident: func(t *testing.T) []string {
				srv.Kill()
				srv.Restart(t)
				return nil
			}})
	})
}

// TestRollbackAOFTail: the append-only file loses its tail (kill -9, the
// AOF cut back to the size it had before the last records were applied,
// in the middle of a command; aof-load-truncated yes loads what is left),
// on Valkey (the RDB rollback runs on both).
func TestRollbackAOFTail(t *testing.T) {
	onFlavor(t, testredis.Valkey, func(t *testing.T, fl testredis.Flavor) {
		srv := testredis.StartStandalone(t, testredis.WithFlavor(fl), testredis.WithAOF(), testredis.WithArgs("--aof-load-truncated", "yes"))
		var file string
		var size int64
		runRollback(t, rollbackCase{rounds: 1, addrs: []string{srv.Addr()}, rdb: srv.Client(),
			before: func(t *testing.T) {
				// everysec: an fsync a second at most, and a write at once
				time.Sleep(1500 * time.Millisecond)
				file, size = lastIncrAOF(t, srv.Dir())
			},
			incident: func(t *testing.T) []string {
				srv.Kill()
				f, now := lastIncrAOF(t, srv.Dir())
				if f != file || now <= size+7 {
					t.Fatalf("the AOF did not grow after the snapshot point: %s %d -> %s %d", file, size, f, now)
				}
				must(t, os.Truncate(file, size+7)) // in the middle of a command
				srv.Restart(t)
				return nil
			}})
	})
}

// TestRollbackReplicaFailover: a replica falls behind (frozen with SIGSTOP
// and its link cut), the consumers apply and commit more on the master, the
// master is killed with kill -9 and the replica promoted (REPLICAOF NO
// ONE); the consumers are restarted against it (projector supports a
// failover by restarting the consumers with the new address, or by a
// DNS name or proxy that follows the master), on Redis (the Sentinel
// failover tests promote a lagging replica on both).
func TestRollbackReplicaFailover(t *testing.T) {
	onFlavor(t, testredis.Redis, func(t *testing.T, fl testredis.Flavor) {
		master := testredis.StartStandalone(t, testredis.WithFlavor(fl))
		replica := testredis.StartStandalone(t, testredis.WithFlavor(fl))
		ctx := context.Background()
		host, port, _ := strings.Cut(master.Addr(), ":")
		must(t, replica.Client().ReplicaOf(ctx, host, port).Err())
		waitReplicaSynced(t, master, replica)
		runRollback(t, rollbackCase{rounds: 1, addrs: []string{master.Addr()}, rdb: master.Client(),
			before: func(t *testing.T) {
				waitReplicaSynced(t, master, replica)
				replica.Pause()
				must(t, master.Client().Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err())
			},
			incident: func(t *testing.T) []string {
				master.Kill()
				replica.Resume()
				must(t, replica.Client().ReplicaOf(ctx, "NO", "ONE").Err())
				return []string{replica.Addr()}
			},
			after: func() redis.UniversalClient { return replica.Client() }})
	})
}

// TestRollbackClusterMaster: one master of a 3-master Redis Cluster (not
// the one holding the global keys) restarts from an older RDB snapshot
// while the two others keep their state.
func TestRollbackClusterMaster(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		c := testredis.StartCluster(t, 3, testredis.WithFlavor(fl))
		ctx := context.Background()
		g, err := c.Client().MasterForKey(ctx, "px:wm:{g}")
		must(t, err)
		var node *testredis.Server
		for _, n := range c.Nodes() {
			if n.Addr() != g.Options().Addr {
				node = n
				break
			}
		}
		runRollback(t, rollbackCase{mode: "cluster", rounds: 1, addrs: c.Addrs(), rdb: c.Client(),
			before: func(t *testing.T) { must(t, node.Client().Save(ctx).Err()) },
			incident: func(t *testing.T) []string {
				node.Kill()
				node.Restart(t)
				return nil
			}})
	})
}

// TestRollbackBeyondWindow: Redis goes back further than idempotency.window
// (2 s here): the consumers refuse to repair it (status rolled_back, not
// ready, one line pointing to the replayer), a replayer run rebuilds
// everything, and they resume by themselves. Events lie within today, so
// their markers outlive the short window and the model's dedupe holds.
func TestRollbackBeyondWindow(t *testing.T) {
	srv := testredis.StartStandalone(t)
	runRollback(t, rollbackCase{rounds: 1, addrs: []string{srv.Addr()}, rdb: srv.Client(), today: true,
		env:    []string{"PROJECTOR_IDEMPOTENCY_WINDOW=2s"},
		before: func(t *testing.T) { must(t, srv.Client().Save(context.Background()).Err()) },
		incident: func(t *testing.T) []string {
			time.Sleep(2500 * time.Millisecond) // the records after the snapshot age past the window
			srv.Kill()
			srv.Restart(t)
			return nil
		},
		recover: func(t *testing.T, env []string, httpAddrs []string) {
			deadline := time.Now().Add(30 * time.Second)
			for {
				code, reason := get("http://" + httpAddrs[0] + "/readyz")
				if code == 503 && strings.Contains(reason, "beyond repair") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("consumer did not refuse the repair: readyz %d %q", code, reason)
				}
				time.Sleep(100 * time.Millisecond)
			}
			rp := exec.Command(replayerBin)
			rp.Env = cleanEnv(env)
			out, err := rp.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "replayed ") {
				t.Fatalf("replayer after a rollback beyond repair: %v\n%s", err, out)
			}
		}})
}

// rollbackCase is one way of bringing back an older Redis state.
type rollbackCase struct {
	mode      string // "" standalone, or cluster
	realKafka bool
	rounds    int
	addrs     []string
	rdb       redis.UniversalClient
	// before takes the older state; incident brings it back after more
	// records were committed, and returns new Redis addresses when the
	// consumers must be restarted against them (after returns their client).
	before   func(t *testing.T)
	incident func(t *testing.T) []string
	after    func() redis.UniversalClient
	// env is added to the consumers' environment; today keeps every event
	// within today; recover, when set, runs after the incident (given the
	// consumers' environment and HTTP addresses).
	env     []string
	today   bool
	recover func(t *testing.T, env []string, httpAddrs []string)
	// minRollbacks is the least projector_redis_rollbacks_total summed over
	// the consumers (0: one per round); check, when set, runs after the
	// last round while the consumers still run (given their HTTP addresses).
	minRollbacks int
	check        func(t *testing.T, httpAddrs []string)
}

func runRollback(t *testing.T, rc rollbackCase) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	var brokers []string
	if rc.realKafka {
		b := testkafka.Start(t)
		for _, topic := range topics {
			b.CreateTopic(t, topic, 4)
		}
		b.CreateTopic(t, "shop.dlq", 1)
		brokers = b.Addrs()
	} else {
		brokers = startKafka(t, 4, topics, "shop.dlq")
	}
	mode := rc.mode
	if mode == "" {
		mode = "standalone"
	}
	start := time.Now()
	gc := gen.DefaultConfig()
	gc.Seed = testSeed(t)
	gc.Start, gc.Span = start.Add(-36*time.Hour), 36*time.Hour
	if rc.today {
		// Every event within today (UTC): yesterday's markers would expire
		// with the short window. The generator snaps some events to the
		// nearest hour (or 1 ms before it), so the hour starts at least 31
		// minutes after midnight (in the first 91 minutes of the day some
		// events lie ahead of now), and it sends no out-of-order events
		// (they go back up to three hours).
		gc.Span = time.Hour
		gc.Start = start.Add(-time.Hour)
		if first := start.Truncate(24 * time.Hour).Add(31 * time.Minute); gc.Start.Before(first) {
			gc.Start = first
		}
		gc.OutOfOrderRate = 0
	}
	log := gen.New(gc).Log(envInt("E2E_EVENTS", 9000))
	// A warm-up, then per round: the records applied after the older
	// state was taken, and the records produced during the incident.
	parts := split(log, 1+2*rc.rounds)

	env := func(addrs []string) []string {
		return append(rc.env[:len(rc.env):len(rc.env)],
			"PROJECTOR_KAFKA_BROKERS="+strings.Join(brokers, ","),
			"PROJECTOR_REDIS_ADDRS="+strings.Join(addrs, ","),
			"PROJECTOR_REDIS_MODE="+mode,
			"PROJECTOR_BATCH_MAX_EVENTS=200",
			"PROJECTOR_LOG_FORMAT=json",
			"PROJECTOR_LOG_LEVEL=warn",
		)
	}
	type member struct {
		p    *proc
		http string
	}
	startAll := func(addrs []string) []member {
		var ms []member
		for range 2 {
			h := freeAddr(t)
			ms = append(ms, member{startConsumer(t, append(env(addrs), "PROJECTOR_HTTP_ADDR="+h)), h})
		}
		return ms
	}
	consumers := startAll(rc.addrs)
	produceAll := func(recs []gen.Record) {
		done := make(chan error, 1)
		produce(ctx, brokers, recs, 100, 100*time.Millisecond, done)
		must(t, <-done)
	}
	caughtUp := func() {
		if err := waitCaughtUp(brokers, "projector", topics, 3*time.Minute); err != nil {
			for _, c := range consumers {
				c.p.dumpStacks()
			}
			t.Fatal(err)
		}
	}
	produceAll(parts[0])
	caughtUp()
	rdb := rc.rdb
	var rollbacks float64
	for round := range rc.rounds {
		rc.before(t)
		produceAll(parts[1+2*round])
		caughtUp()
		done := make(chan error, 1)
		go produce(ctx, brokers, parts[2+2*round], 50, 100*time.Millisecond, done)
		time.Sleep(500 * time.Millisecond)
		if addrs := rc.incident(t); addrs != nil {
			for _, c := range consumers {
				rollbacks += metricValue(c.http, "projector_redis_rollbacks_total")
				c.p.kill9(t)
			}
			consumers = startAll(addrs)
			rdb = rc.after()
		}
		if rc.recover != nil {
			var hs []string
			for _, c := range consumers {
				hs = append(hs, c.http)
			}
			rc.recover(t, env(rc.addrs), hs)
		}
		must(t, <-done)
		caughtUp()
		t.Logf("round %d: caught up after the incident", round+1)
	}
	if rc.check != nil {
		var hs []string
		for _, c := range consumers {
			hs = append(hs, c.http)
		}
		rc.check(t, hs)
	}
	logs := ""
	for _, c := range consumers {
		rollbacks += metricValue(c.http, "projector_redis_rollbacks_total")
		c.p.term(t)
		logs += c.p.log.String()
	}
	if want := cmp.Or(rc.minRollbacks, rc.rounds); rollbacks < float64(want) {
		t.Errorf("projector_redis_rollbacks_total summed over the consumers is %v, want at least %d", rollbacks, want)
	}
	if !strings.Contains(logs, "Redis went back in time") || !strings.Contains(logs, " offsets ") {
		t.Errorf("no log line names the lost offsets; consumer logs end:\n%s", tail(logs, 2000))
	}
	checkModel(t, rdb, log, start)
	checkDeadLetters(t, brokers, topics, "shop.dlq", log)
}

// split cuts recs into n consecutive parts of about equal size.
func split(recs []gen.Record, n int) [][]gen.Record {
	out := make([][]gen.Record, n)
	for i := range n {
		out[i] = recs[i*len(recs)/n : (i+1)*len(recs)/n]
	}
	return out
}

// metricValue reads one unlabelled metric of a consumer (0 when absent or unreachable).
func metricValue(httpAddr, name string) float64 {
	_, body := get("http://" + httpAddr + "/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// lastIncrAOF returns the newest incremental file of a multi-part AOF and its size.
func lastIncrAOF(t *testing.T, dir string) (string, int64) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no incremental AOF file in %s/appendonlydir (err %v)", dir, err)
	}
	f := files[len(files)-1]
	st, err := os.Stat(f)
	must(t, err)
	return f, st.Size()
}

// waitReplicaSynced waits until the replica's link is up and it has the master's offset.
func waitReplicaSynced(t *testing.T, master, replica *testredis.Server) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		mi, err1 := master.Client().Info(ctx, "replication").Result()
		ri, err2 := replica.Client().Info(ctx, "replication").Result()
		if err1 == nil && err2 == nil && infoField(ri, "master_link_status") == "up" &&
			infoField(mi, "master_repl_offset") == infoField(ri, "slave_repl_offset") {
			return
		}
	}
	t.Fatalf("replica %s did not catch up with %s within 30s", replica.Addr(), master.Addr())
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(fmt.Errorf("%w", err))
	}
}
