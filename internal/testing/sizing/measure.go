package sizing

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Usage is the memory of one key family.
type Usage struct {
	Class Class
	Keys  int64
	// Bytes is the sum of MEMORY USAGE (SAMPLES 0: every element counted).
	Bytes int64
}

// Snapshot is the memory of a Redis server at one moment.
type Snapshot struct {
	// UsedMemory is INFO memory used_memory.
	UsedMemory int64
	// Families maps a family name (see Family) to its usage.
	Families map[string]Usage
	// Markers are the marker keys' bytes and remaining time to live.
	Markers []KeyLife
}

// KeyLife is one key's MEMORY USAGE and its remaining time to live (PTTL;
// negative: none).
type KeyLife struct {
	Bytes int64
	TTL   time.Duration
}

// scanCount is the SCAN batch size and the MEMORY USAGE pipeline length.
const scanCount = 1000

// Measure reads used_memory and sums MEMORY USAGE of every key by family.
// It scans the whole keyspace of rdb (a standalone server).
func Measure(ctx context.Context, rdb *redis.Client, prefix string) (Snapshot, error) {
	used, err := UsedMemory(ctx, rdb)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{UsedMemory: used, Families: map[string]Usage{}}
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, prefix+"*", scanCount).Result()
		if err != nil {
			return Snapshot{}, fmt.Errorf("scan keys: %w", err)
		}
		if err := snap.add(ctx, rdb, keys, prefix); err != nil {
			return Snapshot{}, err
		}
		if cursor = next; cursor == 0 {
			return snap, nil
		}
	}
}

// add sums the MEMORY USAGE of keys into their families.
func (s *Snapshot) add(ctx context.Context, rdb *redis.Client, keys []string, prefix string) error {
	if len(keys) == 0 {
		return nil
	}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.MemoryUsage(ctx, k, 0)
		if _, class := Family(k, prefix); class == Markers {
			ttls[i] = pipe.PTTL(ctx, k)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return fmt.Errorf("memory usage of %d keys: %w", len(keys), err)
	}
	for i, k := range keys {
		n, err := cmds[i].Result()
		if err == redis.Nil {
			continue // expired between SCAN and MEMORY USAGE
		}
		if err != nil {
			return fmt.Errorf("memory usage %s: %w", k, err)
		}
		name, class := Family(k, prefix)
		u := s.Families[name]
		u.Class, u.Keys, u.Bytes = class, u.Keys+1, u.Bytes+n
		s.Families[name] = u
		if ttls[i] != nil {
			s.Markers = append(s.Markers, KeyLife{Bytes: n, TTL: ttls[i].Val()})
		}
	}
	return nil
}

// Total sums the usage of the families of class c.
func (s Snapshot) Total(c Class) Usage {
	t := Usage{Class: c}
	for _, u := range s.Families {
		if u.Class == c {
			t.Keys += u.Keys
			t.Bytes += u.Bytes
		}
	}
	return t
}

// UsedMemory returns INFO memory used_memory in bytes.
func UsedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("info memory: %w", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("info memory: used_memory %q: %w", v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("info memory: no used_memory line")
}
