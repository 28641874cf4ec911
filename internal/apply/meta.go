package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/coord"
	"projector/pkg/projections"
)

// Meta is what a consumer asks of Redis beside applying batches: the
// coordination state of px:meta:{g} (coord.Meta: status, tokens, creation,
// rolled_back), what Redis holds as applied (ReadEvidence) and which servers
// it is (Identity).
type Meta struct {
	*coord.Meta
	rdb   redis.UniversalClient
	keys  projections.Keys
	nodes masterWatermarks
}

// NewMeta returns the Meta of the projections under keyPrefix. evidence
// makes ReadEvidence read, on Redis Cluster, each master's own watermarks
// too (those an Applier with Guards.Evidence keeps).
func NewMeta(rdb redis.UniversalClient, keyPrefix string, now func() time.Time, evidence bool) *Meta {
	keys := projections.Keys{Prefix: keyPrefix}
	return &Meta{Meta: coord.New(rdb, keyPrefix, now), rdb: rdb, keys: keys, nodes: masterWatermarks{rdb: rdb, keys: keys, on: evidence}}
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
