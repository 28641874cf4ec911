package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// Sync is what a batch waits for once its writes are applied, before its
// offsets may be committed.
type Sync struct {
	// Replicas is how many replicas must have received the writes (WAIT); 0: none.
	Replicas int
	// AOF makes the writes wait until they are fsynced to the append-only
	// file of the master (and of Replicas replicas): WAITAOF, Redis 7.2+ and Valkey.
	AOF bool
	// Timeout bounds each wait; a wait that times out is retried.
	Timeout time.Duration
}

// On reports whether anything is waited for.
func (s Sync) On() bool { return s.Replicas > 0 || s.AOF }

// sealLua raises each master's own per-partition watermarks (px:nwm) to the
// batch's last offsets. KEYS[1]: the hash. ARGV[1]: "1" to check first that
// no stored watermark lies below a range's first offset - 1 (that master
// went back in time: then nothing is written and {-3, i1, wm1, ...} is
// returned); ARGV[2]: n; then n x (field, firstOffset, lastOffset). Every
// field is written (the larger of the stored and the new offset), so the call
// is a write that a following WAIT waits for. Returns {1}.
const sealLua = `
local n = tonumber(ARGV[2])
local cur = {}
local gaps = nil
for j = 0, n - 1 do
  local b = 3 + 3 * j
  local v = redis.call('HGET', KEYS[1], ARGV[b])
  cur[j] = v and tonumber(v)
  if ARGV[1] == '1' and v and cur[j] < tonumber(ARGV[b + 1]) - 1 then
    gaps = gaps or {-3}
    gaps[#gaps + 1] = j + 1
    gaps[#gaps + 1] = v
  end
end
if gaps then return gaps end
for j = 0, n - 1 do
  local b = 3 + 3 * j
  local last = tonumber(ARGV[b + 2])
  if cur[j] and cur[j] > last then last = cur[j] end
  redis.call('HSET', KEYS[1], ARGV[b], tostring(last))
end
return {1}`

// Gap is a partition whose applied records Redis lost: it holds Applied as
// the last applied offset, below the records that came after.
type Gap struct {
	Topic     string
	Partition int
	// Applied is the last offset whose effects the watermark says are in Redis.
	Applied int64
	// Node names the Redis Cluster master that went back in time ("" for
	// the global watermarks, px:wm:{g}).
	Node string
}

// GapError says Redis holds watermarks below the records that came before a
// batch: it went back in time (a restart from an older snapshot, a lost AOF
// tail, a lagging replica promoted) after those records were applied. The
// batch was not completed; the records after each gap's Applied must be
// applied again (Repair) before it.
type GapError struct {
	Gaps []Gap
}

func (e *GapError) Error() string {
	parts := make([]string, len(e.Gaps))
	for i, g := range e.Gaps {
		where := "global watermarks"
		if g.Node != "" {
			where = "master " + g.Node
		}
		parts[i] = fmt.Sprintf("%s:%d applied up to %d (%s)", g.Topic, g.Partition, g.Applied, where)
	}
	return "redis went back in time: " + strings.Join(parts, ", ")
}

// SyncError says a batch's writes did not reach the replicas or the AOF in time.
type SyncError struct {
	Node string
	What string
}

func (e *SyncError) Error() string { return "redis " + e.Node + ": " + e.What }

// seal records, on each master of a Redis Cluster, that the batch's user
// writes on it are complete (with Evidence), and waits for replicas and the
// AOF (with Sync). On a standalone server the global watermarks are the
// evidence: it only waits, when Sync is on.
func (a *Applier) seal(ctx context.Context, ranges []Range) error {
	if len(ranges) == 0 {
		return nil
	}
	cc, cluster := a.rdb.(*redis.ClusterClient)
	if !a.opts.Sync.On() && (!cluster || !a.opts.Evidence) {
		return nil
	}
	args := make([]any, 0, 2+3*len(ranges))
	check := "0"
	if cluster && a.opts.GapCheck {
		check = "1"
	}
	args = append(args, check, len(ranges))
	for _, r := range ranges {
		args = append(args, tpField(r.Topic, r.Partition), r.First, r.Last)
	}
	if !cluster {
		c, ok := a.rdb.(*redis.Client)
		if !ok {
			return fmt.Errorf("seal batch: unsupported redis client %T", a.rdb)
		}
		return a.sealNode(ctx, c, a.keys.NodeWatermarks("g"), args)
	}
	return a.nodes.forEach(ctx, cc, a.keys, func(ctx context.Context, c *redis.Client, key string) error {
		return a.sealNode(ctx, c, key, args)
	})
}

// sealNode runs the seal script on one server, then WAIT and WAITAOF as configured.
func (a *Applier) sealNode(ctx context.Context, c *redis.Client, key string, args []any) error {
	s := a.opts.Sync
	ms := max(s.Timeout.Milliseconds(), 1)
	pipe := c.Pipeline()
	sealed := pipe.Eval(ctx, sealLua, []string{key}, args...)
	var wait, waitAOF *redis.Cmd
	if s.Replicas > 0 {
		wait = pipe.Do(ctx, "WAIT", s.Replicas, ms)
	}
	if s.AOF {
		waitAOF = pipe.Do(ctx, "WAITAOF", 1, s.Replicas, ms)
	}
	_, _ = pipe.Exec(ctx)
	node := c.Options().Addr
	vals, err := sealed.Slice()
	if err != nil {
		return fmt.Errorf("seal batch on %s: %w", node, err)
	}
	if code, _ := vals[0].(int64); code == -3 {
		return gapsOf(vals, args, node)
	}
	if wait != nil {
		n, err := wait.Int64()
		if err != nil {
			return fmt.Errorf("WAIT on %s: %w", node, err)
		}
		if n < int64(s.Replicas) {
			return &SyncError{Node: node, What: fmt.Sprintf("%d of %d replicas acknowledged the batch within %s (WAIT)", n, s.Replicas, s.Timeout)}
		}
	}
	if waitAOF != nil {
		got, err := waitAOF.Int64Slice()
		if err != nil {
			return fmt.Errorf("WAITAOF on %s: %w", node, err)
		}
		if len(got) != 2 || got[0] < 1 || got[1] < int64(s.Replicas) {
			return &SyncError{Node: node, What: fmt.Sprintf("the batch was not fsynced to the AOF of the master and %d replicas within %s (WAITAOF answered %v)", s.Replicas, s.Timeout, got)}
		}
	}
	return nil
}

// gapsOf decodes a {-3, i1, wm1, ...} reply for the ranges encoded in args
// (check flag, n, then field, first, last per range).
func gapsOf(vals []any, args []any, node string) error {
	ge := &GapError{}
	for j := 1; j+1 < len(vals); j += 2 {
		idx, _ := vals[j].(int64)
		wm, err := strconv.ParseInt(fmt.Sprint(vals[j+1]), 10, 64)
		if err != nil || idx < 1 || 2+3*int(idx) > len(args) {
			return fmt.Errorf("bad gap reply %v", vals)
		}
		field, _ := args[2+3*(idx-1)].(string)
		topic, part, ok := splitTP(field)
		if !ok {
			return fmt.Errorf("bad gap reply field %q", field)
		}
		ge.Gaps = append(ge.Gaps, Gap{Topic: topic, Partition: part, Applied: wm, Node: node})
	}
	if len(ge.Gaps) == 0 {
		return fmt.Errorf("empty gap reply %v", vals)
	}
	return ge
}

// splitTP parses "topic:partition".
func splitTP(f string) (string, int, bool) {
	i := strings.LastIndexByte(f, ':')
	if i < 0 {
		return "", 0, false
	}
	p, err := strconv.Atoi(f[i+1:])
	return f[:i], p, err == nil
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
	msg := err.Error()
	return strings.Contains(msg, "MOVED") || strings.Contains(msg, "ASK") || strings.Contains(msg, "CLUSTERDOWN")
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
