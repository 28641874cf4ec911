package obs

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// refusedMethods are the methods every endpoint answers with 405.
var refusedMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
	http.MethodOptions, http.MethodTrace, "PROPFIND"}

// assertHardened fails unless rec carries the headers Harden sets.
func assertHardened(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	for name, want := range map[string]string{
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": ContentSecurityPolicy,
		"X-Frame-Options":         "DENY",
	} {
		if got := rec.Header().Get(name); got != want {
			t.Errorf("%s: %s %q, want %q", what, name, got, want)
		}
	}
}

// Every endpoint of the consumer's HTTP server carries the headers and
// refuses every method but GET and HEAD before its handler runs.
func TestEveryEndpointHardened(t *testing.T) {
	m := NewMetrics()
	served := 0
	extra := Route{Pattern: "/api/", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served++
		writeText(w, http.StatusOK, "extra")
	})}
	h := NewHTTPHandler(m, NewHealth(m), extra)
	// /debug/pprof/profile and /trace run for seconds on GET: only refused methods are sent to them.
	paths := map[string]bool{"/metrics": true, "/healthz": true, "/readyz": true, "/debug/pprof/": true,
		"/debug/pprof/cmdline": true, "/debug/pprof/symbol": true, "/debug/pprof/heap": true,
		"/debug/pprof/profile": false, "/debug/pprof/trace": false, "/api/x": true, "/nope": true}
	for path, get := range paths {
		if get {
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
				if rec.Code == http.StatusMethodNotAllowed {
					t.Errorf("%s %s: 405", method, path)
				}
				assertHardened(t, method+" "+path, rec)
			}
		}
		for _, method := range refusedMethods {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow \"GET, HEAD\"", method, path, rec.Code, rec.Header().Get("Allow"))
			}
			assertHardened(t, method+" "+path, rec)
		}
	}
	if served != 2 {
		t.Errorf("the extra route served %d requests, want 2 (GET and HEAD only)", served)
	}
}
