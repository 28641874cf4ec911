package query

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// testNow is the fixed clock of the tests: 2026-12-02 15:04:05.678 UTC.
var testNow = time.Date(2026, 12, 2, 15, 4, 5, 678e6, time.UTC)

// fixture is a Reader over a fresh real redis-server with a fixed clock.
type fixture struct {
	rdb  redis.UniversalClient
	r    *Reader
	keys projections.Keys
	now  time.Time
}

// newFixture starts redis-server and returns a Reader with the default
// projections, prefix "shop:" and time zone loc.
func newFixture(t *testing.T, loc *time.Location) *fixture {
	t.Helper()
	srv := testredis.StartStandalone(t)
	return fixtureOn(t, srv.Client(), loc)
}

// fixtureOn returns a fixture over rdb.
func fixtureOn(t *testing.T, rdb redis.UniversalClient, loc *time.Location) *fixture {
	t.Helper()
	f := &fixture{rdb: rdb, keys: projections.Keys{Prefix: "shop:"}, now: testNow}
	f.r = New(rdb, Options{KeyPrefix: "shop:", Location: loc, Projections: projections.Defaults(),
		Now: func() time.Time { return f.now }})
	return f
}

// ms is testNow minus d in Unix ms.
func ms(d time.Duration) int64 { return testNow.Add(-d).UnixMilli() }

// zadd adds member/score pairs to key.
func (f *fixture) zadd(t *testing.T, key string, pairs ...any) {
	t.Helper()
	var zs []redis.Z
	for i := 0; i < len(pairs); i += 2 {
		zs = append(zs, redis.Z{Member: pairs[i], Score: toFloat(pairs[i+1])})
	}
	if err := f.rdb.ZAdd(context.Background(), key, zs...).Err(); err != nil {
		t.Fatalf("ZADD %s: %v", key, err)
	}
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	panic("toFloat: unsupported type")
}

// must returns v, or panics (failing the test) on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ids lists the product ids of ranked entries.
func ids(items []Ranked) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.ProductID)
	}
	return out
}

// equal fails the test when got != want.
func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// allKeys lists the keys matching pattern on every master, sorted.
func (f *fixture) allKeys(t *testing.T, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var out []string
	collect := func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, pattern).Result()
		mu.Lock()
		out = append(out, ks...)
		mu.Unlock()
		return err
	}
	var err error
	if cc, ok := f.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, collect)
	} else {
		err = collect(ctx, f.rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatalf("KEYS %s: %v", pattern, err)
	}
	slices.Sort(out)
	return out
}
