package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// masterWatermarks are, on Redis Cluster, each master's own watermarks
// (Guards.Evidence): the hash px:nwm:{<tag>} on every master, raised after
// every batch, so that one master going back in time is seen while the
// others are intact.
type masterWatermarks struct {
	rdb  redis.UniversalClient
	keys projections.Keys
	on   bool // kept and read at all
	nk   nodeKeys
}

// forEach runs f on every master of cc with the key of its watermarks, concurrently.
func (m *masterWatermarks) forEach(ctx context.Context, cc *redis.ClusterClient, f func(context.Context, *redis.Client, string) error) error {
	return m.nk.forEach(ctx, cc, m.keys, f)
}

// read reads every master's watermarks, by address (none unless on Redis
// Cluster and on).
func (m *masterWatermarks) read(ctx context.Context) (map[string]map[string]int64, error) {
	nodes := map[string]map[string]int64{}
	cc, ok := m.rdb.(*redis.ClusterClient)
	if !ok || !m.on {
		return nodes, nil
	}
	var mu sync.Mutex
	err := m.forEach(ctx, cc, func(ctx context.Context, c *redis.Client, key string) error {
		vals, err := c.HGetAll(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("read %s on %s: %w", key, c.Options().Addr, err)
		}
		mu.Lock()
		nodes[c.Options().Addr] = parseOffsets(vals)
		mu.Unlock()
		return nil
	})
	return nodes, err
}

// nodeKeys maps each master of a Redis Cluster to the key of its own
// watermarks: px:nwm:{<tag>} with a tag whose slot the master serves.
type nodeKeys struct {
	mu   sync.Mutex
	keys map[string]string // master address -> key
}

// forEach runs f on every master with its key, concurrently. A master not
// in the map, or an error that says the slots moved, refreshes the map.
func (n *nodeKeys) forEach(ctx context.Context, cc *redis.ClusterClient, k projections.Keys, f func(context.Context, *redis.Client, string) error) error {
	keys, err := n.get(ctx, cc, k, false)
	if err != nil {
		return err
	}
	err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		key, ok := keys[c.Options().Addr]
		if !ok {
			return fmt.Errorf("master %s: %w", c.Options().Addr, errTopology)
		}
		return f(ctx, c, key)
	})
	if err != nil && (errors.Is(err, errTopology) || movedError(err)) {
		_, _ = n.get(ctx, cc, k, true)
	}
	return err
}

// errTopology says the cluster's masters changed since the keys were chosen.
var errTopology = errors.New("the cluster's masters changed")

// movedError reports an error that says a slot is served elsewhere.
func movedError(err error) bool {
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return moved || ask || redis.IsClusterDownError(err)
}

// get returns the map, computing it from CLUSTER SLOTS when empty or when refresh is set.
func (n *nodeKeys) get(ctx context.Context, cc *redis.ClusterClient, k projections.Keys, refresh bool) (map[string]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.keys != nil && !refresh {
		return n.keys, nil
	}
	if refresh {
		cc.ReloadState(ctx)
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("read cluster slots: %w", err)
	}
	owner := make([]string, 16384)
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		for i := s.Start; i <= s.End && i < len(owner); i++ {
			owner[i] = s.Nodes[0].Addr
		}
	}
	keys := map[string]string{}
	want := 0
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			if _, ok := keys[s.Nodes[0].Addr]; !ok {
				keys[s.Nodes[0].Addr] = ""
				want++
			}
		}
	}
	for i := 0; want > 0 && i < 1<<20; i++ {
		tag := "n" + strconv.Itoa(i)
		if addr := owner[slotOf(tag)]; addr != "" && keys[addr] == "" {
			keys[addr] = k.NodeWatermarks(tag)
			want--
		}
	}
	n.keys = keys
	return keys, nil
}

// slotOf is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash
// tag (the text between the first '{' and the next '}', when not empty), or
// of the whole key, modulo 16384.
func slotOf(key string) int {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % 16384)
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
