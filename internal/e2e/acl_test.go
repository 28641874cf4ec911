package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/testing/testredis"
)

// aclDoc is the document whose ACL lines the tests below apply.
const aclDoc = "docs/operations.md"

// aclLines returns the ACL SETUSER lines of aclDoc's code block, by the
// comment line above them ("every mode", "Redis Cluster", "behind Sentinel"),
// each split into its arguments. Its comment lines start the sections
// "every mode", "7.2" (Redis 7.2+ and Valkey), "cluster" and "sentinel".
func aclLines(t *testing.T) map[string][][]string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(file), "..", "..", aclDoc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "# every mode"):
			section = "every mode"
		case strings.HasPrefix(line, "# Redis 7.2+ and Valkey"):
			section = "7.2"
		case strings.HasPrefix(line, "# Redis Cluster"):
			section = "cluster"
		case strings.HasPrefix(line, "# behind Sentinel"):
			section = "sentinel"
		case strings.HasPrefix(line, "ACL SETUSER projector-") && section != "":
			out[section] = append(out[section], strings.Fields(line))
		case line == "```":
			section = ""
		}
	}
	for _, s := range []string{"every mode", "7.2", "cluster", "sentinel"} {
		if len(out[s]) != 3 {
			t.Fatalf("%s: %d ACL lines for %s, want 3 (consumer, replayer, api)", aclDoc, len(out[s]), s)
		}
	}
	return out
}

// aclPassword is the password the tests give user.
func aclPassword(user string) string { return "pw-of-" + user }

// setUsers runs lines on the server of admin (the default user), with each
// user's test password for CHANGE-ME.
func setUsers(t *testing.T, admin *redis.Client, lines [][]string) {
	t.Helper()
	for _, l := range lines {
		args := make([]any, len(l))
		for i, a := range l {
			args[i] = strings.Replace(a, ">CHANGE-ME", ">"+aclPassword(l[2]), 1)
		}
		if err := admin.Do(context.Background(), args...).Err(); err != nil {
			t.Fatalf("%s: %v", strings.Join(l, " "), err)
		}
	}
}

// asUser is the PROJECTOR_* settings of a command run as user.
func asUser(user string) []string {
	return []string{"PROJECTOR_REDIS_USERNAME=" + user, "PROJECTOR_REDIS_PASSWORD=" + aclPassword(user)}
}

// aclDenials returns the entries of ACL LOG on every server of admins.
func aclDenials(t *testing.T, admins []*redis.Client) []string {
	t.Helper()
	var out []string
	for _, a := range admins {
		entries, err := a.Do(context.Background(), "ACL", "LOG").Slice()
		if err != nil {
			t.Fatalf("ACL LOG: %v", err)
		}
		for _, e := range entries {
			out = append(out, fmt.Sprint(e))
		}
	}
	return out
}

// TestLeastPrivilegeACL: with the ACL users of docs/operations.md and
// nothing more, on Redis and Valkey: the consumer applies a generated log,
// a replay after Redis lost its data rebuilds it, two rebuilds of
// projections next to the running consumer (a hold and a chase) end, the
// API serves every page, every key equals the model, no process warns of a
// refused command, and ACL LOG records no denial.
func TestLeastPrivilegeACL(t *testing.T) {
	forFlavors(t, func(t *testing.T, fl testredis.Flavor) {
		srv := testredis.StartStandalone(t, testredis.WithFlavor(fl))
		lines := aclLines(t)
		setUsers(t, srv.Client(), lines["every mode"])
		if fl == testredis.Valkey {
			setUsers(t, srv.Client(), lines["7.2"])
		}
		runLeastPrivilege(t, srv.Client(), []*redis.Client{srv.Client()}, []string{srv.Addr()}, "standalone",
			func(ctx context.Context) error { return srv.Client().FlushAll(ctx).Err() })
	})
}

// TestLeastPrivilegeACLCluster: the same on a 3-master Redis Cluster (Redis
// 7.0), with the lines for Redis Cluster added on every node.
func TestLeastPrivilegeACLCluster(t *testing.T) {
	c := testredis.StartCluster(t, 3)
	lines := aclLines(t)
	var admins []*redis.Client
	for _, n := range c.Nodes() {
		setUsers(t, n.Client(), lines["every mode"])
		setUsers(t, n.Client(), lines["cluster"])
		admins = append(admins, n.Client())
	}
	runLeastPrivilege(t, c.Client(), admins, c.Addrs(), "cluster", c.FlushAll)
}

func runLeastPrivilege(t *testing.T, rdb redis.UniversalClient, admins []*redis.Client, addrs []string, mode string,
	flushAll func(context.Context) error) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	brokers := startKafka(t, 3, topics, "shop.dlq")
	log, _, start := seededLog(t, 12)
	log = log[:min(len(log), 4000)]
	done := make(chan error, 1)
	go produce(ctx, brokers, log, 500, 20*time.Millisecond, done)
	env := []string{
		"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"PROJECTOR_REDIS_ADDRS=" + strings.Join(addrs, ","),
		"PROJECTOR_REDIS_MODE=" + mode,
		"PROJECTOR_BATCH_MAX_EVENTS=300",
		"PROJECTOR_LOG_FORMAT=json",
	}
	httpAddr := freeAddr(t)
	c := startConsumer(t, append(append(env, asUser("projector-consumer")...), "PROJECTOR_HTTP_ADDR="+httpAddr))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	checkModel(t, rdb, log, start)

	// Redis loses its data; the replayer rebuilds, the consumer resumes.
	if err := flushAll(ctx); err != nil {
		t.Fatal(err)
	}
	waitLossReported(t, httpAddr)
	replayer := func(args ...string) {
		t.Helper()
		rp := exec.Command(replayerBin, args...)
		rp.Env = cleanEnv(append(env, asUser("projector-replayer")...))
		out, err := rp.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "replayed ") {
			t.Fatalf("replayer %v: %v\n%s", args, err, tail(string(out), 3000))
		}
	}
	replayer()
	if !waitMetric(httpAddr, "projector_redis_data_lost 0", 8*time.Second) {
		t.Fatal("the consumer did not resume after the replay")
	}
	// Rebuilds next to the running consumer: a hold (global) and a chase (per user).
	replayer("--projections", "trending", "--wipe", "--yes")
	replayer("--projections", "last_viewed", "--wipe", "--yes")
	checkModel(t, rdb, log, start)

	apiAddr := freeAddr(t)
	a := startProcess(t, apiBin, append(append(env, asUser("projector-api")...), "PROJECTOR_HTTP_ADDR="+apiAddr))
	waitHTTP(t, "http://"+apiAddr+"/readyz", http.StatusOK, "ready")
	today := time.Now().UTC()
	for _, page := range []string{"/", "/api/last-viewed?user=u1", "/api/history?user=u1", "/api/orders?user=u1",
		"/api/stats?stat=views&from=" + today.Format("2006-01-02") + "&to=" + today.AddDate(0, 0, 1).Format("2006-01-02"),
		"/api/stats?stat=orders&user=u1&granularity=hour&from=" + today.Format("2006-01-02T15") + "&to=" + today.Add(time.Hour).Format("2006-01-02T15"),
		"/api/bestsellers/today", "/api/bestsellers/today?cursor=", "/api/bestsellers/week", "/api/most-viewed/today?cursor=",
		"/api/trending", "/api/orders/recent", "/api/overview", "/api/status",
		"/api/rank?ranking=bestsellers-week&product=p1&around=2", "/api/rank?ranking=most-viewed-today&product=p1"} {
		code, body := get("http://" + apiAddr + page)
		if code != http.StatusOK && (code != http.StatusNotFound || !strings.Contains(body, "not ranked")) {
			t.Errorf("GET %s as projector-api: %d %s", page, code, tail(body, 300))
		}
	}
	a.term(t)
	c.term(t)
	if d := aclDenials(t, admins); len(d) > 0 {
		t.Errorf("ACL LOG records %d denials, first ones:\n%s", len(d), strings.Join(d[:min(len(d), 5)], "\n"))
	}
	for name, out := range map[string]string{"consumer": c.log.String(), "api": a.log.String()} {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "refused") || strings.Contains(l, "NOPERM") {
				t.Errorf("%s: %s", name, l)
			}
		}
	}
}

// TestDangerousCommandsRefusedWarn: a user allowed everything but the
// @dangerous commands (INFO and CONFIG among them) runs the consumer, which
// says in one warning line each which check the refused command turns off
// (the server-identity check, the eviction-policy check) and applies the log.
func TestDangerousCommandsRefusedWarn(t *testing.T) {
	ctx := context.Background()
	srv := testredis.StartStandalone(t)
	if err := srv.Client().Do(ctx, "ACL", "SETUSER", "app", "on", ">app-pw", "~*", "&*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	brokers := startKafka(t, 3, topics, "shop.dlq")
	log, _, start := seededLog(t, 13)
	log = log[:min(len(log), 1000)]
	done := make(chan error, 1)
	go produce(ctx, brokers, log, 500, 0, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c := startConsumer(t, []string{"PROJECTOR_KAFKA_BROKERS=" + strings.Join(brokers, ","), "PROJECTOR_REDIS_ADDRS=" + srv.Addr(),
		"PROJECTOR_REDIS_USERNAME=app", "PROJECTOR_REDIS_PASSWORD=app-pw", "PROJECTOR_LOG_FORMAT=json",
		"PROJECTOR_HTTP_ADDR=" + freeAddr(t)})
	if err := waitCaughtUp(brokers, "projector", topics, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	c.term(t)
	checkModel(t, srv.Client(), log, start)
	for command, check := range map[string]string{"INFO": "server-identity check", "CONFIG GET": "maxmemory-policy"} {
		var lines []string
		for _, l := range logLinesWith(t, c.log.String(), command) {
			if l["level"] == "warn" {
				msg, _ := l["msg"].(string)
				lines = append(lines, msg)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], check) {
			t.Errorf("%d warnings naming %s: %q; want one naming the %s", len(lines), command, lines, check)
		}
	}
}
