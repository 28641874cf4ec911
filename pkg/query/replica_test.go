package query

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// TestSnapshotsReadOnMasterWhenReplicaLacksThem: a Replica that holds
// nothing (a replica lagging behind the master forever) still gives the
// rankings and ranks of the master: pointers and snapshots missing on the
// replica are read on the master, where they are built; live keys are read
// from the replica only (they lag with it).
func TestSnapshotsReadOnMasterWhenReplicaLacksThem(t *testing.T) {
	f := newFixture(t, time.UTC)
	empty := testredis.StartStandalone(t)
	ctx := context.Background()
	lagging := New(f.rdb, Options{KeyPrefix: "shop:", Location: time.UTC, Projections: projections.Defaults(),
		Now: func() time.Time { return f.now }, Replica: empty.Client()})
	for d := range WeekDays {
		day := testNow.AddDate(0, 0, -d).Format("2006-01-02")
		f.zadd(t, f.keys.Bestsellers(day), "p1", 10+d, "p2", 20, "p3", 5*d, "p4", 1)
	}
	f.zadd(t, f.keys.LastViewed("u1"), "p1", ms(time.Minute))
	week := func(r *Reader) func(PageRequest) (RankPage, error) {
		return func(req PageRequest) (RankPage, error) { return r.BestsellersWeek(ctx, req) }
	}
	want := pageAll(t, week(f.r), 2, func(int) {})
	equal(t, "7-day bestsellers through a replica without the snapshots", pageAll(t, week(lagging), 2, func(int) {}), want)
	today := pageAll(t, func(req PageRequest) (RankPage, error) { return f.r.BestsellersToday(ctx, req) }, 3, func(int) {})
	equal(t, "today's cursor pages through a replica without the snapshots",
		pageAll(t, func(req PageRequest) (RankPage, error) { return lagging.BestsellersToday(ctx, req) }, 3, func(int) {}), today)
	r1 := must(f.r.Rank(ctx, RankingBestsellersWeek, "p3", 1))
	r2 := must(lagging.Rank(ctx, RankingBestsellersWeek, "p3", 1))
	r1.Snapshot, r1.BuiltAt, r2.Snapshot, r2.BuiltAt = "", 0, "", 0
	equal(t, "rank through a replica without the snapshots", r2, r1)
	if lv := must(lagging.LastViewed(ctx, "u1")); len(lv) != 0 {
		t.Fatalf("last viewed read from the replica = %v, want what the replica holds (nothing)", lv)
	}
	if n := must(empty.Client().DBSize(ctx).Result()); n != 0 {
		t.Fatalf("the replica holds %d keys: the Reader wrote to it", n)
	}
}

// TestReadsFromSentinelReplica: behind three Sentinels, a Reader with a
// ReplicaOnly failover client reads a user's lists, stats and orders from
// the replica (its commandstats count them, the master's do not), builds
// snapshots on the master, and answers while either server is frozen
// (SIGSTOP): from the master while the replica is, from the replica while
// the master is.
func TestReadsFromSentinelReplica(t *testing.T) {
	s := testredis.StartSentinel(t, 1)
	ctx := context.Background()
	master, replica := s.Nodes()[0], s.Nodes()[1]
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.Addrs(), DisableIdentity: true})
	rep := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.Addrs(), ReplicaOnly: true,
		ReadTimeout: 500 * time.Millisecond, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close(); _ = rep.Close() })
	f := fixtureOn(t, rdb, time.UTC)
	r := New(rdb, Options{KeyPrefix: "shop:", Location: time.UTC, Projections: projections.Defaults(),
		Now: func() time.Time { return f.now }, Replica: rep})
	f.zadd(t, f.keys.LastViewed("u1"), "p1", ms(time.Minute), "p2", ms(time.Hour))
	f.zadd(t, f.keys.History("u1", "", "", false), "p1@2026-12-02", ms(time.Minute))
	f.zadd(t, f.keys.Bestsellers("2026-12-02"), "p1", 3, "p2", 7)
	day := projections.BucketsOf(testNow.UnixMilli(), time.UTC).Day
	must(0, rdb.Set(ctx, f.keys.UserStat("u1", "views", day), 4, 0).Err())
	s.WaitSynced(t, master, replica)
	for _, n := range s.Nodes() {
		must(0, n.Client().ConfigResetStat(ctx).Err())
	}

	lv := must(r.LastViewed(ctx, "u1"))
	equal(t, "last viewed", lv, []Viewed{{"p1", ms(time.Minute)}, {"p2", ms(time.Hour)}})
	if h := must(r.History(ctx, "u1", Scope{}, 1, 10)); h.Total != 1 {
		t.Fatalf("history: %+v", h)
	}
	st := must(r.Stats(ctx, StatsQuery{Stat: "views", User: "u1", From: testNow.Truncate(24 * time.Hour),
		To: testNow.Truncate(24*time.Hour).AddDate(0, 0, 1), Granularity: "day"}))
	if st.Total != 4 {
		t.Fatalf("stats: %+v", st)
	}
	page := pageAll(t, func(req PageRequest) (RankPage, error) { return r.BestsellersToday(ctx, req) }, 1, func(int) {})
	equal(t, "today's cursor pages", ids(page), []string{"p2", "p1"})

	reads := func(n *testredis.Server) map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		info := must(n.Client().Info(ctx, "commandstats").Result())
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			out[strings.TrimPrefix(name, "cmdstat_")] = must(strconv.ParseInt(calls, 10, 64))
		}
		return out
	}
	onReplica, onMaster := reads(replica), reads(master)
	for _, cmd := range []string{"zrange", "mget", "zcount", "exec"} {
		if onReplica[cmd] == 0 {
			t.Errorf("the replica ran no %s: %v", cmd, onReplica)
		}
	}
	if onMaster["zrange"] != 0 || onMaster["mget"] != 0 || onMaster["zcount"] != 0 {
		t.Errorf("the master served reads: %v", onMaster)
	}
	if onMaster["zunionstore"] == 0 || onMaster["set"] == 0 {
		t.Errorf("the snapshot was not built on the master (a replica counts the commands it replicates too): master %v", onMaster)
	}

	answers := func(what string) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		got, err := r.LastViewed(rctx, "u1")
		if err != nil {
			t.Fatalf("last viewed while %s: %v", what, err)
		}
		equal(t, "last viewed while "+what, got, lv)
	}
	replica.Pause()
	answers("the replica is frozen")
	replica.Resume()
	master.Pause()
	answers("the master is frozen")
	master.Resume()
}

// TestReadsFromClusterReplica: on a Redis Cluster, a Reader whose Replica
// is a ReadOnly cluster client reads a user's lists from the replica of
// their slot, the MULTI of a history page included.
func TestReadsFromClusterReplica(t *testing.T) {
	c := testredis.StartCluster(t, 3)
	ctx := context.Background()
	f := fixtureOn(t, c.Client(), time.UTC)
	key := f.keys.LastViewed("u1")
	m, err := c.Client().MasterForKey(ctx, key)
	must(0, err)
	var master *testredis.Server
	for _, n := range c.Nodes() {
		if n.Addr() == m.Options().Addr {
			master = n
		}
	}
	replica := c.AddReplica(t, master)
	ro := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ReadOnly: true, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { _ = ro.Close() })
	r := New(c.Client(), Options{KeyPrefix: "shop:", Location: time.UTC, Projections: projections.Defaults(),
		Now: func() time.Time { return f.now }, Replica: ro})
	f.zadd(t, key, "p1", ms(time.Minute))
	f.zadd(t, f.keys.History("u1", "", "", false), "p1@2026-12-02", ms(time.Minute))
	if n, err := master.Client().Do(ctx, "WAIT", 1, 10000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on %s: %d, %v", master.Addr(), n, err)
	}
	must(0, replica.Client().ConfigResetStat(ctx).Err())
	lv, err := r.LastViewed(ctx, "u1")
	if err != nil {
		t.Fatalf("last viewed: %v", err)
	}
	equal(t, "last viewed", lv, []Viewed{{"p1", ms(time.Minute)}})
	if h, err := r.History(ctx, "u1", Scope{}, 1, 10); err != nil || h.Total != 1 || len(h.Items) != 1 {
		t.Fatalf("history: %+v, %v", h, err)
	}
	stats := must(replica.Client().Info(ctx, "commandstats").Result())
	for _, cmd := range []string{"cmdstat_zrange:", "cmdstat_exec:"} {
		if !strings.Contains(stats, cmd) {
			t.Errorf("the replica %s ran no %s\n%s", replica.Addr(), strings.Trim(cmd, "cmdstat_:"), stats)
		}
	}
}
