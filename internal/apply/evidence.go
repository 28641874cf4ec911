package apply

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Evidence is what Redis holds as applied, per "topic:partition": the last
// offset of the global watermarks and, on Redis Cluster, of each master's own.
type Evidence struct {
	Global map[string]int64
	// Nodes maps a master's address to its watermarks.
	Nodes map[string]map[string]int64
}

// Lowest returns, for field, the lowest offset any watermark holds, and
// where ("" for the global ones); ok is false when none holds the field.
func (e Evidence) Lowest(field string) (off int64, node string, ok bool) {
	if v, has := e.Global[field]; has {
		off, ok = v, true
	}
	addrs := make([]string, 0, len(e.Nodes))
	for a := range e.Nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		if v, has := e.Nodes[a][field]; has && (!ok || v < off) {
			off, node, ok = v, a, true
		}
	}
	return off, node, ok
}

// ReadEvidence reads the global watermarks and, on Redis Cluster with
// evidence, every master's own.
func (m *Meta) ReadEvidence(ctx context.Context) (Evidence, error) {
	ev := Evidence{Nodes: map[string]map[string]int64{}}
	g, err := m.rdb.HGetAll(ctx, m.keys.Watermarks()).Result()
	if err != nil {
		return ev, fmt.Errorf("read watermarks: %w", err)
	}
	ev.Global = parseOffsets(g)
	ev.Nodes, err = m.nodes.read(ctx)
	return ev, err
}

// precheck fails with a *GapError, before anything is written, when a
// watermark (wms, the global ones, or a master's own) lies below a range's
// first offset - 1: the records before the batch must be applied again
// first, since not every write commutes (a history_item_removed applied
// before the view it removes would leave the view behind).
func (a *Applier) precheck(ctx context.Context, ranges []Range, wms map[string]string) error {
	ev := Evidence{Global: parseOffsets(wms)}
	var err error
	if ev.Nodes, err = a.nodes.read(ctx); err != nil {
		return err
	}
	ge := &GapError{}
	for _, r := range ranges {
		f := r.TP().String()
		if low, node, ok := ev.Lowest(f); ok && low < r.First-1 {
			ge.Gaps = append(ge.Gaps, Gap{Topic: r.Topic, Partition: r.Partition, Applied: low, Node: node})
		}
	}
	if len(ge.Gaps) > 0 {
		return ge
	}
	return nil
}

// parseOffsets parses a hash of decimal offsets, leaving out what does not parse.
func parseOffsets(h map[string]string) map[string]int64 {
	out := make(map[string]int64, len(h))
	for f, v := range h {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[f] = n
		}
	}
	return out
}

// Identity names the Redis servers behind the client: per master address,
// its run id (new at every start) and replication id (new when a replica is
// promoted). A change means the server may hold an older state than before.
func (m *Meta) Identity(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	var mu sync.Mutex
	one := func(ctx context.Context, c *redis.Client) error {
		id, err := identityOf(ctx, c)
		if err != nil {
			return err
		}
		mu.Lock()
		out[c.Options().Addr] = id
		mu.Unlock()
		return nil
	}
	switch c := m.rdb.(type) {
	case *redis.ClusterClient:
		return out, c.ForEachMaster(ctx, one)
	case *redis.Client:
		return out, one(ctx, c)
	default:
		return nil, fmt.Errorf("identity: unsupported redis client %T", m.rdb)
	}
}

// identityOf is "run_id/master_replid" of one server.
func identityOf(ctx context.Context, c *redis.Client) (string, error) {
	info, err := c.Info(ctx, "server", "replication").Result()
	if err != nil {
		return "", fmt.Errorf("INFO on %s: %w", c.Options().Addr, err)
	}
	var run, repl string
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			run = v
		} else if v, ok := strings.CutPrefix(line, "master_replid:"); ok {
			repl = v
		}
	}
	if run == "" {
		return "", errors.New("INFO on " + c.Options().Addr + " names no run_id")
	}
	return run + "/" + repl, nil
}
