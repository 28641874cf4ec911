package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"projector/internal/dashboard/status"
	"projector/internal/obs"
	"projector/internal/testing/testredis"
	"projector/pkg/projections"
	"projector/pkg/query"
)

// now is the fixed clock of the tests.
var now = time.Date(2026, 12, 2, 15, 4, 5, 0, time.UTC)

// server is the API over a real redis-server seeded with a known state.
type server struct {
	*httptest.Server
	rdb  *redis.Client
	keys projections.Keys
}

func newServer(t *testing.T) *server {
	t.Helper()
	srv := testredis.StartStandalone(t)
	rdb := srv.Client()
	clock := func() time.Time { return now }
	reader := query.New(rdb, query.Options{KeyPrefix: "shop:", Projections: projections.Defaults(), Now: clock})
	h := New(Options{Reader: reader, Status: status.New(status.Options{RDB: rdb, KeyPrefix: "shop:", Now: clock}),
		Now: clock, Registry: prometheus.NewRegistry()})
	mux := http.NewServeMux()
	mux.Handle("/api/", h)
	s := &server{Server: httptest.NewServer(obs.Harden(mux)), rdb: rdb, keys: projections.Keys{Prefix: "shop:"}}
	t.Cleanup(s.Close)
	seed(t, s)
	return s
}

// seed writes a known state.
func seed(t *testing.T, s *server) {
	ctx := context.Background()
	k := s.keys
	ts := func(d time.Duration) float64 { return float64(now.Add(-d).UnixMilli()) }
	p := s.rdb.TxPipeline()
	p.ZAdd(ctx, k.LastViewed("u1"), redis.Z{Member: "p1", Score: ts(time.Minute)}, redis.Z{Member: "p2", Score: ts(time.Hour)})
	p.ZAdd(ctx, k.History("u1", "", "", false), redis.Z{Member: "p1@2026-12-02", Score: ts(time.Minute)},
		redis.Z{Member: "p2@2026-12-02", Score: ts(time.Hour)}, redis.Z{Member: "p3@2026-12-01", Score: ts(20 * time.Hour)})
	p.Set(ctx, k.GlobalStat("views", "2026-12-02"), 1234, 0)
	p.Set(ctx, k.GlobalStat("views", "2026-12-02T15"), 34, 0)
	p.Set(ctx, k.GlobalStat("orders", "2026-12-02"), 12, 0)
	for i, m := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		p.ZAdd(ctx, k.Bestsellers("2026-12-02"), redis.Z{Member: "best-" + m, Score: float64(7 - i/3)}) // ties
	}
	p.ZAdd(ctx, k.Bestsellers("2026-11-30"), redis.Z{Member: "best-g", Score: 5})
	p.ZAdd(ctx, k.ProductViews("2026-12-02"), redis.Z{Member: "pv-1", Score: 40}, redis.Z{Member: "pv-2", Score: 41})
	p.ZAdd(ctx, k.Trending("2026-12-02T15:04"), redis.Z{Member: "hot", Score: 9})
	p.ZAdd(ctx, k.RecentOrders(), redis.Z{Member: "o1", Score: ts(time.Minute)}, redis.Z{Member: "o0", Score: ts(10 * time.Minute)})
	p.ZAdd(ctx, k.Orders("u1"), redis.Z{Member: "o1", Score: ts(time.Minute)})
	p.Set(ctx, k.Order("u1", "o1"), fmt.Sprintf(`{"id":"o1","user_id":"u1","ts":%d,"items":[{"product_id":"best-a","quantity":2,"price_cents":499}],"total_cents":998}`, now.Add(-time.Minute).UnixMilli()), 0)
	p.HSet(ctx, k.Meta(), "status", "ready")
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// get fetches path and decodes the JSON body into a generic value.
func (s *server) get(t *testing.T, path string) (int, map[string]any) {
	t.Helper()
	res, err := http.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %d, not JSON: %s", path, res.StatusCode, b)
	}
	return res.StatusCode, v
}

// ok fetches path, requires 200 and returns the body re-encoded as JSON.
func (s *server) ok(t *testing.T, path string) string {
	t.Helper()
	code, v := s.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, code, v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestEndpointsReturnTheKnownState(t *testing.T) {
	s := newServer(t)
	for path, want := range map[string][]string{
		"/api/last-viewed?user=u1":                                                   {`"product_id":"p1"`, `"product_id":"p2"`},
		"/api/history?user=u1&size=2":                                                {`"total":3`, `"product_id":"p1"`, `"day":"2026-12-02"`, `"size":2`},
		"/api/history?user=u1&size=2&page=2":                                         {`"product_id":"p3"`, `"day":"2026-12-01"`},
		"/api/stats?stat=views&from=2026-12-02&to=2026-12-03":                        {`"total":1234`, `"total_buckets":["2026-12-02"]`},
		"/api/stats?stat=views&from=2026-12-02T15&to=2026-12-02T16&granularity=hour": {`"value":34`},
		"/api/bestsellers/today?size=3":                                              {`"total":7`, `"product_id":"best-c"`, `"rank":3`},
		"/api/bestsellers/week?size=1":                                               {`"product_id":"best-g"`, `"units":10`, `"days":2`, `"snapshot":"best7:2026-12-02@`},
		"/api/most-viewed/today":                                                     {`"product_id":"pv-2"`, `"score":41`},
		"/api/trending?n=3":                                                          {`"product_id":"hot"`, `"score":9`},
		"/api/orders/recent?minutes=5":                                               {`"count":1`, `"id":"o1"`},
		"/api/orders?user=u1":                                                        {`"total_cents":998`, `"price_cents":499`, `"total":1`},
		"/api/overview":                                                              {`"views":1234`, `"orders":12`, `"day":"2026-12-02"`},
		"/api/status":                                                                {`"projections":"ready"`},
		"/api/":                                                                      {`"/api/trending":["n"]`},
	} {
		got := s.ok(t, path)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("GET %s: want %s in\n%s", path, w, got)
			}
		}
	}
}

func TestBadInputIs400WithAClearMessage(t *testing.T) {
	s := newServer(t)
	for path, msg := range map[string]string{
		"/api/last-viewed":                                                     "user: required",
		"/api/last-viewed?user=":                                               `user`,
		"/api/last-viewed?user=a%20b":                                          "user: must be a string of 1..64 printable ASCII bytes",
		"/api/last-viewed?user=a:b":                                            "without '{', '}' or ':'",
		"/api/last-viewed?user=" + strings.Repeat("x", 65):                     "65 bytes",
		"/api/last-viewed?user=u1&user=u2":                                     "user: given more than once",
		"/api/last-viewed?user=u1&limit=3":                                     "limit: unknown parameter",
		"/api/history?user=u1&size=0":                                          "size: must be an integer in 1..100",
		"/api/history?user=u1&size=101":                                        "size: must be an integer in 1..100",
		"/api/history?user=u1&page=abc":                                        "page: must be an integer",
		"/api/history?user=u1&device=phone&store=s1":                           "history is not scoped",
		"/api/stats?stat=views&from=2026-12-02":                                "to: required",
		"/api/stats?stat=views&from=soon&to=2026-12-03":                        "from: must be a bucket",
		"/api/stats?stat=likes&from=2026-12-02&to=2026-12-03":                  "stat: must be one of",
		"/api/stats?stat=views&from=2026-01-01&to=2027-01-01&granularity=hour": "at most 744",
		"/api/stats?stat=views&from=2026-12-02T10:30:00Z&to=2026-12-03":        "from: must start a day",
		"/api/bestsellers/today?page=2&cursor=":                                "page by rank or by cursor",
		"/api/bestsellers/today?cursor=xyz":                                    "cursor: not a cursor",
		"/api/bestsellers/week?size=1000":                                      "size: must be an integer in 1..100",
		"/api/trending?n=0":                                                    "n: must be an integer in 1..100",
		"/api/orders/recent?minutes=61":                                        "minutes: must be in 1..60",
		"/api/orders?user=u1&page=1001":                                        "page: must be an integer in 1..1000",
		"/api/stats?stat=views&from=2026-12-02&to=2026-12-03&x=%zz":            "not a valid query string",
	} {
		code, v := s.get(t, path)
		if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(v["error"]), msg) {
			t.Errorf("GET %s: %d %v, want 400 with %q", path, code, v, msg)
		}
	}
	code, _ := s.get(t, "/api/nope")
	if code != http.StatusNotFound {
		t.Errorf("unknown endpoint: %d", code)
	}
	res, err := http.Post(s.URL+"/api/trending", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", res.StatusCode)
	}
}

func TestCursorPagingOverHTTPUnderWrites(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	var seen []string
	next := ""
	for n := 0; ; n++ {
		path := "/api/bestsellers/today?size=2&cursor=" + url.QueryEscape(next)
		code, v := s.get(t, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, code, v)
		}
		for _, it := range v["items"].([]any) {
			seen = append(seen, it.(map[string]any)["product_id"].(string))
		}
		next, _ = v["next"].(string)
		if next == "" {
			break
		}
		// Sales land between two page requests.
		s.rdb.ZIncrBy(ctx, s.keys.Bestsellers("2026-12-02"), 10, "best-g")
		s.rdb.ZIncrBy(ctx, s.keys.Bestsellers("2026-12-02"), 1, fmt.Sprintf("late-%d", n))
	}
	want := "[best-c best-b best-a best-f best-e best-d best-g]"
	if fmt.Sprint(seen) != want {
		t.Fatalf("cursor pages: %v, want %s", seen, want)
	}
	// A cursor whose snapshot is gone gets 410.
	keys, _ := s.rdb.Keys(ctx, "shop:snap:{g}:best1:*-*").Result()
	s.rdb.Del(ctx, keys...)
	code, v := s.get(t, "/api/bestsellers/today?size=2&cursor=")
	if code != http.StatusOK {
		t.Fatalf("first page: %d %v", code, v)
	}
	first := v["next"].(string)
	keys, _ = s.rdb.Keys(ctx, "shop:snap:{g}:best1:*-*").Result()
	s.rdb.Del(ctx, keys...)
	if code, v := s.get(t, "/api/bestsellers/today?size=2&cursor="+url.QueryEscape(first)); code != http.StatusGone {
		t.Fatalf("expired cursor: %d %v", code, v)
	}
}

func TestRedisDownIs503(t *testing.T) {
	srv := testredis.StartStandalone(t)
	srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	h := New(Options{Reader: query.New(rdb, query.Options{Projections: projections.Defaults()})})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/trending", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "redis unavailable") {
		t.Fatalf("redis down: %d %s", rec.Code, rec.Body)
	}
}
