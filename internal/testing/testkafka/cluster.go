package testkafka

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxClusterBrokers is the largest cluster kafka.sh start-cluster forms.
const maxClusterBrokers = 9

// Cluster is a Kafka cluster of combined broker+controller nodes forming
// one KRaft quorum, started by StartCluster.
type Cluster struct {
	brokers []*Broker
}

// StartCluster starts brokers combined nodes (1..9) forming one KRaft quorum
// (every node a voter) on free 127.0.0.1 ports, by running
// `scripts/testenv/kafka.sh start-cluster`, and returns once every node
// serves. Defaults: 384 MiB heap per node; internal topics and
// default.replication.factor with replication min(brokers, 3);
// min.insync.replicas min(brokers, 2); broker.session.timeout.ms 4000, so a
// killed node is fenced (and its partitions move) within about 4s. All JVMs
// are killed by tb.Cleanup; failure fails the test with the script's output.
func StartCluster(tb testing.TB, brokers int, opts ...Option) *Cluster {
	tb.Helper()
	if brokers < 1 || brokers > maxClusterBrokers {
		tb.Fatalf("testkafka: StartCluster: brokers must be in 1..%d, got %d", maxClusterBrokers, brokers)
	}
	cfg, script := prepare(tb, opts)
	if cfg.secure.enabled() {
		tb.Fatalf("testkafka: WithSASL and WithTLS are supported by Start only")
	}
	for attempt := 1; ; attempt++ {
		base, err := freeRange(2 * brokers)
		if err != nil {
			tb.Fatalf("testkafka: choose cluster ports: %v", err)
		}
		root := tempDir(tb)
		c := &Cluster{}
		for i := 1; i <= brokers; i++ {
			c.brokers = append(c.brokers, &Broker{
				id:     i,
				port:   base + i - 1,
				dir:    filepath.Join(root, "node-"+strconv.Itoa(i)),
				script: script,
				cfg:    cfg,
			})
		}
		// Registered after TempDir, so it runs before the directory is removed.
		tb.Cleanup(func() { c.each(func(b *Broker) { b.cleanup(tb) }) })
		args := []string{
			"start-cluster", "--brokers", strconv.Itoa(brokers),
			"--base-port", strconv.Itoa(base), "--data", root,
		}
		args = append(append(args, runArgs(cfg)...), propArgs(cfg)...)
		begin := time.Now()
		out, err := runScript(script, cfg.startTimeout+formatAllowance, args...)
		if err == nil {
			tb.Logf("testkafka: %d-broker cluster %s started in %s", brokers, strings.Join(c.Addrs(), ","), time.Since(begin).Round(time.Millisecond))
			return c
		}
		c.each((*Broker).Kill)
		if attempt < startAttempts && portInUse(out) {
			continue
		}
		tb.Fatalf("testkafka: start %d-broker cluster on %v: %v\n%s", brokers, c.Addrs(), err, out)
	}
}

// Addrs returns every node's client address in node order, stopped nodes
// included, as a client's bootstrap list would.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		addrs[i] = b.Addr()
	}
	return addrs
}

// Brokers returns the nodes in node order (node i+1 at index i), so a test
// can stop, kill or restart one.
func (c *Cluster) Brokers() []*Broker {
	return append([]*Broker(nil), c.brokers...)
}

// CreateTopic creates topic name through the running nodes and waits until
// every running node's metadata shows a leader for each partition and all
// replication replicas in sync. Failure fails tb.
func (c *Cluster) CreateTopic(tb testing.TB, name string, partitions, replication int) {
	tb.Helper()
	if err := createTopic(c.brokers, name, partitions, replication); err != nil {
		tb.Fatalf("testkafka: %v", err)
	}
}

// WaitInSync waits until every running node reports a leader for each
// partition of topic and all of its replicas in sync, for example after a
// restarted node caught up. Failure (60s) fails tb.
func (c *Cluster) WaitInSync(tb testing.TB, topic string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), topicTimeout)
	defer cancel()
	if err := waitTopic(ctx, runningAddrs(c.brokers), topic, 0, 0); err != nil {
		tb.Fatalf("testkafka: topic %q not in sync after %s: %v", topic, topicTimeout, err)
	}
}

// Stop stops every node gracefully, all at once (one by one, the last
// nodes would wait for a controller quorum that is already gone).
func (c *Cluster) Stop() { c.each((*Broker).Stop) }

// each runs f on every node concurrently and waits.
func (c *Cluster) each(f func(*Broker)) {
	var wg sync.WaitGroup
	for _, b := range c.brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(b)
		}()
	}
	wg.Wait()
}

// String describes the cluster for messages.
func (c *Cluster) String() string {
	return fmt.Sprintf("cluster %s", strings.Join(c.Addrs(), ","))
}
