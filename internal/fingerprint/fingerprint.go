// Package fingerprint publishes the settings that decide what a projection
// holds, so a replayer can refuse to rebuild with settings that disagree with
// the running consumers'. Consumers keep `px:cfg:{g}` (a hash: field per
// process, value the settings as JSON) fresh every few seconds; it expires 30
// seconds after the last consumer stopped refreshing it.
package fingerprint

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/config"
	"projector/pkg/projections"
)

// TTL is how long the published settings outlive the last refresh.
const TTL = 30 * time.Second

// Settings are the configuration values that change what projections hold.
type Settings struct {
	GroupID     string             `json:"group_id"`
	Topics      []string           `json:"topics"`
	TimeZone    string             `json:"time_zone"`
	Window      string             `json:"idempotency.window"`
	Projections projections.Config `json:"projections"`
}

// Of extracts the settings of cfg.
func Of(cfg config.Config) Settings {
	return Settings{GroupID: cfg.Kafka.GroupID, Topics: cfg.Kafka.Topics, TimeZone: cfg.TimeZone,
		Window: cfg.Idempotency.Window.String(), Projections: cfg.Projections}
}

// Key is `px:cfg:{g}` with the prefix.
func Key(prefix string) string { return projections.Keys{Prefix: prefix}.Global("px:cfg") }

// published is the value stored per process.
type published struct {
	AtMs     int64    `json:"at_ms"`
	Settings Settings `json:"settings"`
	// Ack is the token of the last pause (px:meta:{g} status paused) the
	// process acknowledged: it has no batch in flight and applies none until
	// the pause ends.
	Ack string `json:"ack,omitempty"`
}

// Publish records the settings of one consumer process and the pause token it acknowledges.
func Publish(ctx context.Context, rdb redis.UniversalClient, prefix, process string, s Settings, ack string) error {
	b, err := json.Marshal(published{AtMs: time.Now().UnixMilli(), Settings: s, Ack: ack})
	if err != nil {
		return fmt.Errorf("encode settings: %w", err)
	}
	pipe := rdb.TxPipeline()
	pipe.HSet(ctx, Key(prefix), process, b)
	pipe.PExpire(ctx, Key(prefix), TTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish settings to %s: %w", Key(prefix), err)
	}
	return nil
}

// Withdraw removes a stopping process's settings.
func Withdraw(ctx context.Context, rdb redis.UniversalClient, prefix, process string) error {
	return rdb.HDel(ctx, Key(prefix), process).Err()
}

// Unacked lists the running consumer processes (refreshed within TTL) that
// have not acknowledged the pause token.
func Unacked(ctx context.Context, rdb redis.UniversalClient, prefix, token string) ([]string, error) {
	all, err := rdb.HGetAll(ctx, Key(prefix)).Result()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", Key(prefix), err)
	}
	var out []string
	for process, raw := range all {
		var p published
		if err := json.Unmarshal([]byte(raw), &p); err != nil || time.Since(time.UnixMilli(p.AtMs)) > TTL {
			continue
		}
		if p.Ack != token {
			out = append(out, process)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Disagreements compares s with every running consumer's published settings
// (refreshed within TTL) and returns one line per setting that differs (none
// when no consumer runs).
func Disagreements(ctx context.Context, rdb redis.UniversalClient, prefix string, s Settings) ([]string, error) {
	all, err := rdb.HGetAll(ctx, Key(prefix)).Result()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", Key(prefix), err)
	}
	mine := flatten(s)
	var out []string
	for process, raw := range all {
		var p published
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			out = append(out, fmt.Sprintf("consumer %s published unreadable settings", process))
			continue
		}
		if time.Since(time.UnixMilli(p.AtMs)) > TTL {
			continue // that process stopped refreshing: it is gone
		}
		other := flatten(p.Settings)
		for k, v := range mine {
			if !reflect.DeepEqual(other[k], v) {
				out = append(out, fmt.Sprintf("%s: %v here, %v in consumer %s", k, v, other[k], process))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// flatten maps dotted setting names to values.
func flatten(s Settings) map[string]any {
	var m map[string]any
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &m)
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if mv, ok := v.(map[string]any); ok {
			for k, x := range mv {
				name := k
				if prefix != "" {
					name = prefix + "." + k
				}
				walk(name, x)
			}
			return
		}
		out[prefix] = v
	}
	walk("", m)
	return out
}
