package api

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"projector/internal/testing/testredis"
	"projector/pkg/projections"
	"projector/pkg/query"
)

// TestEveryProjectionHasAnEndpoint walks the projection registry: with one
// projection switched off (the others on), some endpoint answers 404 naming
// it, and no endpoint answers 404 naming another.
func TestEveryProjectionHasAnEndpoint(t *testing.T) {
	rdb := testredis.StartStandalone(t).Client()
	clock := func() time.Time { return now }
	values := map[string]string{"user": "u1", "stat": "views", "from": "2026-12-01", "to": "2026-12-02",
		"ranking": "bestsellers-today", "product": "p1"}
	for _, s := range projections.All() {
		cfg := projections.Defaults()
		s.SetEnabled(&cfg, false)
		h := New(Options{Reader: query.New(rdb, query.Options{Projections: cfg, Now: clock}), Now: clock,
			Registry: prometheus.NewRegistry()}).(*handler)
		var endpoints []string
		for _, rt := range h.table() {
			q := url.Values{}
			for _, p := range rt.params {
				if v, ok := values[p]; ok {
					q.Set(p, v)
				}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, rt.path+"?"+q.Encode(), nil))
			body := rec.Body.String()
			if rec.Code != http.StatusNotFound || !strings.Contains(body, "projection is switched off") {
				continue
			}
			if !strings.Contains(body, `"`+s.Name+": ") {
				t.Errorf("%s off: %s answers %s", s.Name, rt.path, body)
			}
			endpoints = append(endpoints, rt.path)
		}
		if len(endpoints) == 0 {
			t.Errorf("%s has no endpoint: none answers 404 while it is off", s.Name)
		}
	}
}
