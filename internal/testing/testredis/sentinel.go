package testredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMasterName is the name the Sentinels of StartSentinel monitor
// their master under.
const SentinelMasterName = "projector"

// sentinelQuorum is how many Sentinels must agree that the master is down.
const sentinelQuorum = 2

// Sentinels is a master with replicas watched by three Sentinels, started by
// StartSentinel: redis-server (or valkey-server) data nodes and the same
// binary run with --sentinel.
type Sentinels struct {
	cfg       config
	nodes     []*Server // data nodes, the first master at start
	sentinels []*Server
}

// StartSentinel starts a master, replicas replicas of it (REPLICAOF) and
// three Sentinels monitoring it as SentinelMasterName (quorum 2,
// down-after-milliseconds 1000 and failover-timeout 3000 unless
// WithSentinelTimings says otherwise), every process on a free loopback
// port with its own directory. It returns once every replica completed its
// first sync and every Sentinel knows the replicas and the two other
// Sentinels, so that a failover can start at once. Options apply to the
// data nodes (WithFlavor, WithAOF, WithArgs) and the Sentinels
// (WithFlavor, WithSentinelPassword, WithSentinelTimings). Everything is
// stopped by tb.Cleanup; failure fails the test.
func StartSentinel(tb testing.TB, replicas int, opts ...Option) *Sentinels {
	tb.Helper()
	cfg := applyOptions(opts)
	s := &Sentinels{cfg: cfg}
	data := cfg
	data.sentinelPassword = ""
	master := startServer(tb, data, false, 0)
	s.nodes = append(s.nodes, master)
	host, port, _ := net.SplitHostPort(master.Addr())
	for range replicas {
		rc := data
		rc.extraArgs = append([]string{"--replicaof", host, port}, data.extraArgs...)
		s.nodes = append(s.nodes, startServer(tb, rc, false, 0))
	}
	sc := cfg
	sc.extraArgs, sc.aof = nil, false
	for range 3 {
		s.sentinels = append(s.sentinels, startProcess(tb, sc, false, 0, func(dir string) []string {
			lines := []string{
				"dir " + dir,
				fmt.Sprintf("sentinel monitor %s %s %s %d", SentinelMasterName, host, port, sentinelQuorum),
				fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMasterName, cfg.downAfter.Milliseconds()),
				fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMasterName, cfg.failoverTimeout.Milliseconds()),
				fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMasterName),
			}
			if cfg.sentinelPassword != "" {
				lines = append(lines, "requirepass "+cfg.sentinelPassword)
			}
			return lines
		}))
	}
	for _, r := range s.nodes[1:] {
		s.WaitSynced(tb, master, r)
	}
	if err := s.waitKnown(cfg.readyTimeout, replicas); err != nil {
		tb.Fatalf("testredis: Sentinels %v: %v", s.Addrs(), err)
	}
	return s
}

// Addrs returns the Sentinels' addresses ("127.0.0.1:<port>").
func (s *Sentinels) Addrs() []string {
	out := make([]string, len(s.sentinels))
	for i, n := range s.sentinels {
		out[i] = n.Addr()
	}
	return out
}

// MasterName returns the name the Sentinels monitor the master under.
func (s *Sentinels) MasterName() string { return SentinelMasterName }

// Nodes returns the data nodes, the first master at start first, so that a
// test can pause, kill or restart one.
func (s *Sentinels) Nodes() []*Server { return append([]*Server(nil), s.nodes...) }

// SentinelServers returns the Sentinel processes (their Client talks to the
// Sentinel, authenticated with WithSentinelPassword's password).
func (s *Sentinels) SentinelServers() []*Server { return append([]*Server(nil), s.sentinels...) }

// Flavor returns the processes' implementation (Redis or Valkey).
func (s *Sentinels) Flavor() Flavor { return s.cfg.flavor }

// node returns the data node at addr, or nil.
func (s *Sentinels) node(addr string) *Server {
	for _, n := range s.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// MasterAddr asks the running Sentinels, in turn, for the master's address
// (SENTINEL GET-MASTER-ADDR-BY-NAME) and returns the first answer.
func (s *Sentinels) MasterAddr(ctx context.Context) (string, error) {
	var errs []error
	for _, sn := range s.sentinels {
		if cmd, _ := sn.running(); cmd == nil {
			continue
		}
		addr, err := sn.Client().Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMasterName).StringSlice()
		if err == nil && len(addr) == 2 {
			return net.JoinHostPort(addr[0], addr[1]), nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %v %w", sn.Addr(), addr, err))
	}
	return "", fmt.Errorf("no Sentinel names the master: %w", errors.Join(errs...))
}

// Master returns the data node every running Sentinel names as the master
// and that says it is one (INFO replication role:master), or an error
// saying why there is none yet.
func (s *Sentinels) Master(ctx context.Context) (*Server, error) {
	var addr string
	for _, sn := range s.sentinels {
		if cmd, _ := sn.running(); cmd == nil {
			continue
		}
		got, err := sn.Client().Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMasterName).StringSlice()
		if err != nil || len(got) != 2 {
			return nil, fmt.Errorf("sentinel %s: %v %w", sn.Addr(), got, err)
		}
		a := net.JoinHostPort(got[0], got[1])
		if addr != "" && a != addr {
			return nil, fmt.Errorf("the Sentinels disagree: %s and %s", addr, a)
		}
		addr = a
	}
	n := s.node(addr)
	if n == nil {
		return nil, fmt.Errorf("the Sentinels name %q, no data node", addr)
	}
	info, err := n.Client().Info(ctx, "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO replication on %s: %w", addr, err)
	}
	if role := parseInfo(info)["role"]; role != "master" {
		return nil, fmt.Errorf("%s, named master by the Sentinels, says role:%s", addr, role)
	}
	return n, nil
}

// WaitMaster waits until the Sentinels agree on a master other than not
// (nil: any) that says it is one, and returns it; after timeout it fails
// the test.
func (s *Sentinels) WaitMaster(tb testing.TB, not *Server, timeout time.Duration) *Server {
	tb.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		m, err := s.Master(ctx)
		if err == nil && m != not {
			return m
		}
		if err == nil {
			err = fmt.Errorf("the master is still %s", m.Addr())
		}
		if time.Now().After(deadline) {
			tb.Fatalf("testredis: no new master within %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Failover asks a running Sentinel for a planned failover (SENTINEL
// FAILOVER: a replica is promoted although the master is up), repeating
// the request while the Sentinels find no replica fit to promote yet, and
// waits until the promoted replica is the master the Sentinels name; it
// returns it. Failure, or no new master within timeout, fails the test.
func (s *Sentinels) Failover(tb testing.TB, timeout time.Duration) *Server {
	tb.Helper()
	ctx := context.Background()
	old, err := s.Master(ctx)
	if err != nil {
		tb.Fatalf("testredis: failover: %v", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		var sn *Server
		for _, c := range s.sentinels {
			if cmd, _ := c.running(); cmd != nil {
				sn = c
				break
			}
		}
		if sn == nil {
			tb.Fatal("testredis: failover: no Sentinel is running")
		}
		err := sn.Client().Do(ctx, "SENTINEL", "FAILOVER", SentinelMasterName).Err()
		if err == nil || strings.HasPrefix(err.Error(), "INPROG") {
			break
		}
		if !strings.HasPrefix(err.Error(), "NOGOODSLAVE") || time.Now().After(deadline) {
			tb.Fatalf("testredis: SENTINEL FAILOVER %s on %s: %v", SentinelMasterName, sn.Addr(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s.WaitMaster(tb, old, time.Until(deadline))
}

// WaitSynced waits until replica's link to master is up and it holds the
// master's replication offset; after the ready timeout it fails the test.
func (s *Sentinels) WaitSynced(tb testing.TB, master, replica *Server) {
	tb.Helper()
	ctx := context.Background()
	var last string
	for deadline := time.Now().Add(s.cfg.readyTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mi, err1 := master.Client().Info(ctx, "replication").Result()
		ri, err2 := replica.Client().Info(ctx, "replication").Result()
		if err1 != nil || err2 != nil {
			last = fmt.Sprint(err1, err2)
			continue
		}
		m, r := parseInfo(mi), parseInfo(ri)
		last = fmt.Sprintf("link %s, offsets %s / %s", r["master_link_status"], m["master_repl_offset"], r["slave_repl_offset"])
		if r["master_link_status"] == "up" && r["master_port"] == master.Addr()[strings.LastIndex(master.Addr(), ":")+1:] &&
			m["master_repl_offset"] == r["slave_repl_offset"] {
			return
		}
	}
	tb.Fatalf("testredis: replica %s did not catch up with %s within %s: %s", replica.Addr(), master.Addr(), s.cfg.readyTimeout, last)
}

// waitKnown polls until every Sentinel sees the master up, knows replicas
// replicas and the two other Sentinels.
func (s *Sentinels) waitKnown(timeout time.Duration, replicas int) error {
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		err := s.known(ctx, replicas)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// known reports nil when every Sentinel sees the master up with replicas
// replicas and len(sentinels)-1 other Sentinels.
func (s *Sentinels) known(ctx context.Context, replicas int) error {
	for _, sn := range s.sentinels {
		m, err := sn.Client().Do(ctx, "SENTINEL", "MASTER", SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("SENTINEL MASTER on %s: %w", sn.Addr(), err)
		}
		f := fieldsOf(m)
		switch {
		case f["flags"] != "master":
			return fmt.Errorf("sentinel %s: master flags %q", sn.Addr(), f["flags"])
		case f["num-slaves"] != strconv.Itoa(replicas):
			return fmt.Errorf("sentinel %s: %s replicas, want %d", sn.Addr(), f["num-slaves"], replicas)
		case f["num-other-sentinels"] != strconv.Itoa(len(s.sentinels)-1):
			return fmt.Errorf("sentinel %s: %s other Sentinels, want %d", sn.Addr(), f["num-other-sentinels"], len(s.sentinels)-1)
		}
	}
	return nil
}

// fieldsOf turns a Sentinel's reply of alternating names and values (a
// flat array in RESP2, a map in RESP3) into a map.
func fieldsOf(v any) map[string]string {
	out := map[string]string{}
	switch r := v.(type) {
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			out[fmt.Sprint(r[i])] = fmt.Sprint(r[i+1])
		}
	case map[any]any:
		for k, val := range r {
			out[fmt.Sprint(k)] = fmt.Sprint(val)
		}
	}
	return out
}

// ReplicaOf makes node a replica of master (REPLICAOF), for a node that
// comes back after a failover (the Sentinels would convert it too, a few
// seconds later), and waits until it is in sync.
func (s *Sentinels) ReplicaOf(tb testing.TB, node, master *Server) {
	tb.Helper()
	host, port, _ := net.SplitHostPort(master.Addr())
	if err := node.Client().ReplicaOf(context.Background(), host, port).Err(); err != nil {
		tb.Fatalf("testredis: REPLICAOF %s on %s: %v", master.Addr(), node.Addr(), err)
	}
	s.WaitSynced(tb, master, node)
}

// Stop stops every process gracefully. Cleanup does this too.
func (s *Sentinels) Stop() {
	for _, n := range s.sentinels {
		n.Stop()
	}
	for _, n := range s.nodes {
		n.Stop()
	}
}

// sentinelClient is a client of one Sentinel (used by tests of this
// package).
func (s *Sentinels) sentinelClient(i int) *redis.Client { return s.sentinels[i].Client() }
