package apply

import (
	"context"
	"fmt"
	"strconv"

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
