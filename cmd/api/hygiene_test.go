package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"projector/internal/obs"
	"projector/internal/testing/testredis"
)

// request sends method path to the API and returns the response with its body read.
func (a *api) request(t *testing.T, method, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, a.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// routes returns every path the command serves: the read API's endpoints
// (from its index at /api/), the page and the files it references, the
// process endpoints and an unknown path.
func (a *api) routes(t *testing.T) []string {
	t.Helper()
	_, index := a.request(t, http.MethodGet, "/api/")
	var endpoints map[string][]string
	if err := json.Unmarshal([]byte(index), &endpoints); err != nil || len(endpoints) < 10 {
		t.Fatalf("/api/ index %q: %v, want the endpoints", index, err)
	}
	paths := []string{"/", "/metrics", "/healthz", "/readyz", "/debug/pprof/", "/debug/pprof/cmdline", "/nope"}
	for p := range endpoints {
		paths = append(paths, p)
	}
	_, page := a.request(t, http.MethodGet, "/")
	assets := regexp.MustCompile(`(?:src|href)="(/[a-z.]+)"`).FindAllStringSubmatch(page, -1)
	if len(assets) < 2 {
		t.Fatalf("the page references %d files of its own, want its script and style sheet", len(assets))
	}
	for _, m := range assets {
		paths = append(paths, m[1])
	}
	sort.Strings(paths)
	return paths
}

// Every response carries nosniff, the strict CSP and frame denial, and every
// route refuses methods other than GET and HEAD with 405 and Allow.
func TestEveryRouteHardened(t *testing.T) {
	srv := testredis.StartStandalone(t)
	srv.Client().HSet(context.Background(), "px:meta:{g}", "status", "ready")
	a := startAPI(t, []string{"--http-addr", "127.0.0.1:0", "--log-level", "error"},
		[]string{"PROJECTOR_REDIS_ADDRS=" + srv.Addr(), "PROJECTOR_KAFKA_BROKERS=127.0.0.1:1"})
	hardened := func(what string, res *http.Response) {
		t.Helper()
		csp := res.Header.Get("Content-Security-Policy")
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || csp != obs.ContentSecurityPolicy ||
			!strings.Contains(csp, "frame-ancestors 'none'") || !strings.HasPrefix(csp, "default-src 'none';") ||
			res.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v, want nosniff, the strict CSP and X-Frame-Options DENY", what, res.Header)
		}
	}
	for _, path := range a.routes(t) {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			res, _ := a.request(t, method, path)
			if res.StatusCode == http.StatusMethodNotAllowed {
				t.Errorf("%s %s: 405", method, path)
			}
			hardened(method+" "+path, res)
		}
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			res, body := a.request(t, method, path)
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d Allow %q %q, want 405 with Allow: GET, HEAD", method, path, res.StatusCode, res.Header.Get("Allow"), body)
			}
			hardened(method+" "+path, res)
		}
	}
}
