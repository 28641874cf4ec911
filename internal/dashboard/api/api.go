// Package api serves the read patterns of pkg/query as a JSON HTTP API
// under /api/ (docs/api.md). Every parameter is
// validated: a bad one gets 400 with {"error": "<param>: <problem>"}, never a
// 500 or an unbounded read.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"projector/internal/dashboard/status"
	"projector/pkg/query"
)

// Options configure the API.
type Options struct {
	Reader *query.Reader
	// Status reports the consumers; nil answers /api/status with 404.
	Status *status.Monitor
	// Location is time_zone loaded (for parsing ranges and the overview).
	Location *time.Location
	// Now is the clock (default time.Now); it must be the Reader's.
	Now func() time.Time
	// Registry receives the API metrics (may be nil).
	Registry prometheus.Registerer
	Log      *zap.Logger
	// Timeout bounds one request's reads (default 5s).
	Timeout time.Duration
}

// route is one endpoint: its query parameters and what it returns.
type route struct {
	path   string
	params []string
	serve  func(ctx context.Context, p *params) (any, error)
}

// handler serves the routes.
type handler struct {
	opts     Options
	routes   map[string]route
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New returns the API handler; mount it at "/api/" behind obs.Harden, which
// refuses methods other than GET and HEAD.
func New(opts Options) http.Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	h := &handler{opts: opts, routes: map[string]route{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "projector_api_requests_total",
			Help: "Read API requests by route and HTTP status code."}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "projector_api_request_duration_seconds",
			Help: "Read API request duration by route.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"route"}),
	}
	if opts.Registry != nil {
		opts.Registry.MustRegister(h.requests, h.duration)
	}
	for _, r := range h.table() {
		h.routes[r.path] = r
	}
	return h
}

// ServeHTTP dispatches, validates and writes JSON.
func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	rt, ok := h.routes[req.URL.Path]
	name := rt.path
	if !ok {
		name = "unknown"
	}
	code := h.serve(w, req, rt, ok)
	h.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
	h.duration.WithLabelValues(name).Observe(time.Since(start).Seconds())
}

func (h *handler) serve(w http.ResponseWriter, req *http.Request, rt route, ok bool) int {
	if !ok {
		return writeError(w, http.StatusNotFound, "no such endpoint: "+req.URL.Path+" (see /api/)")
	}
	p := newParams(req.URL.RawQuery, rt.params...)
	ctx, cancel := context.WithTimeout(req.Context(), h.opts.Timeout)
	defer cancel()
	var v any
	err := p.err
	if err == nil {
		v, err = rt.serve(ctx, p)
	}
	if err == nil {
		err = p.err
	}
	if err != nil {
		code, msg := classify(err)
		if code >= 500 {
			h.opts.Log.Warn("read API request failed", zap.String("path", req.URL.Path), zap.Error(err))
		}
		return writeError(w, code, msg)
	}
	return writeJSON(w, http.StatusOK, v)
}

// classify maps an error to a status code and message.
func classify(err error) (int, string) {
	var ie *query.InputError
	var ne net.Error
	switch {
	case errors.As(err, &ie):
		return http.StatusBadRequest, ie.Error()
	case errors.Is(err, query.ErrDisabled), errors.Is(err, query.ErrNotRanked), errors.Is(err, errNoStatus):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, query.ErrCursorExpired):
		return http.StatusGone, err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne), errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrClosed):
		return http.StatusServiceUnavailable, "redis unavailable: " + err.Error()
	}
	return http.StatusInternalServerError, "internal error: " + err.Error()
}

// writeJSON writes v as an uncached JSON response.
func writeJSON(w http.ResponseWriter, code int, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return writeError(w, http.StatusInternalServerError, "encode response: "+err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
	return code
}

// writeError writes {"error": msg}.
func writeError(w http.ResponseWriter, code int, msg string) int {
	return writeJSON(w, code, map[string]string{"error": msg})
}
