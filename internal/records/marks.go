package records

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// markMax raises hash fields to the given values, never lowering them.
var markMax = redis.NewScript(`
for i = 1, #ARGV, 2 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if not cur or tonumber(cur) < tonumber(ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1`)

// DLQMarks remembers in `px:dlq:{g}` the highest offset of each partition whose
// poison records were dead-lettered.
type DLQMarks struct {
	rdb redis.UniversalClient
	key string
}

// NewDLQMarks returns the dead-letter marks stored through rdb.
func NewDLQMarks(rdb redis.UniversalClient, prefix string) *DLQMarks {
	return &DLQMarks{rdb: rdb, key: projections.Keys{Prefix: prefix}.Global("px:dlq")}
}

// Done returns the stored offset of each "topic:partition" field that has one.
func (d *DLQMarks) Done(ctx context.Context, fields []string) (map[string]int64, error) {
	vals, err := d.rdb.HMGet(ctx, d.key, fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", d.key, err)
	}
	out := map[string]int64{}
	for i, v := range vals {
		if s, ok := v.(string); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				out[fields[i]] = n
			}
		}
	}
	return out, nil
}

// Mark raises the stored offsets to marks.
func (d *DLQMarks) Mark(ctx context.Context, marks map[string]int64) error {
	args := make([]any, 0, 2*len(marks))
	for f, o := range marks {
		args = append(args, f, strconv.FormatInt(o, 10))
	}
	if err := markMax.Run(ctx, d.rdb, []string{d.key}, args...).Err(); err != nil {
		return fmt.Errorf("update %s: %w", d.key, err)
	}
	return nil
}

// claimScript claims dead-lettering of partitions (ARGV[3..]) for owner
// ARGV[1] for ARGV[2] ms, in fields "c:<topic>:<partition>" = "<owner>|<until ms>".
// It claims all or none: it returns the owner of a live claim held by another,
// or "" when the claim is now the caller's.
var claimScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 3, #ARGV do
  local v = redis.call('HGET', KEYS[1], 'c:' .. ARGV[i])
  if v then
    local sep = string.find(v, '|', 1, true)
    local owner, untilMs = string.sub(v, 1, sep - 1), tonumber(string.sub(v, sep + 1))
    if owner ~= ARGV[1] and untilMs > now then return owner end
  end
end
for i = 3, #ARGV do
  redis.call('HSET', KEYS[1], 'c:' .. ARGV[i], ARGV[1] .. '|' .. string.format('%.0f', now + tonumber(ARGV[2])))
end
return ''`)

// releaseScript drops the claims of owner ARGV[1] on partitions ARGV[2..].
var releaseScript = redis.NewScript(`
for i = 2, #ARGV do
  local v = redis.call('HGET', KEYS[1], 'c:' .. ARGV[i])
  if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. '|' then
    redis.call('HDEL', KEYS[1], 'c:' .. ARGV[i])
  end
end
return 1`)

// Claim makes owner the only process dead-lettering records of the
// partitions ("topic:partition") for ttl, unless another owner's claim on one
// of them is still live: then it returns that owner and claims nothing. Two
// consumers that hold the same batch during a rebalance thus dead-letter its
// poison records one after the other, and the second finds them marked done.
func (d *DLQMarks) Claim(ctx context.Context, partitions []string, owner string, ttl time.Duration) (string, error) {
	args := []any{owner, ttl.Milliseconds()}
	for _, p := range partitions {
		args = append(args, p)
	}
	holder, err := claimScript.Run(ctx, d.rdb, []string{d.key}, args...).Text()
	if err != nil {
		return "", fmt.Errorf("claim dead-lettering in %s: %w", d.key, err)
	}
	return holder, nil
}

// Release drops owner's claims on the partitions.
func (d *DLQMarks) Release(ctx context.Context, partitions []string, owner string) error {
	args := []any{owner}
	for _, p := range partitions {
		args = append(args, p)
	}
	if err := releaseScript.Run(ctx, d.rdb, []string{d.key}, args...).Err(); err != nil {
		return fmt.Errorf("release dead-letter claims in %s: %w", d.key, err)
	}
	return nil
}
