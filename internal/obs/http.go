package obs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// shutdownTimeout bounds the graceful shutdown of the HTTP server.
const shutdownTimeout = 5 * time.Second

// NewHTTPHandler serves
//   - /metrics: m.Registry in the Prometheus exposition format;
//   - /healthz: 200 "ok" as long as the process runs;
//   - /readyz: 200 "ready" when h is ready, else 503 with h's reason
//     ("not ready" when the reason is empty);
//   - /debug/pprof/: the Go runtime profiles (net/http/pprof), e.g.
//     /debug/pprof/profile?seconds=30 for a CPU profile;
//   - routes: extra handlers (the read API and dashboard).
//
// Bodies are text/plain without a trailing newline. Every response carries
// the headers of Harden, and only GET and HEAD are served. m and h must not
// be nil.
func NewHTTPHandler(m *Metrics, h *Health, routes ...Route) http.Handler {
	return NewMux(m.Registry, h, routes...)
}

// Route is an extra handler served next to /metrics, /healthz and /readyz;
// Pattern is an http.ServeMux pattern such as "/api/".
type Route struct {
	Pattern string
	Handler http.Handler
}

// NewMux is NewHTTPHandler for any registry (a process with metrics of its
// own, like the read API): /metrics serves reg. reg and h must not be nil.
func NewMux(reg *prometheus.Registry, h *Health, routes ...Route) http.Handler {
	mux := http.NewServeMux()
	for _, r := range routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ready, reason := h.Ready()
		if ready {
			writeText(w, http.StatusOK, "ready")
			return
		}
		if reason == "" {
			reason = "not ready"
		}
		writeText(w, http.StatusServiceUnavailable, reason)
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return Harden(mux)
}

// writeText writes a plain-text, uncached response.
func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// Serve listens on addr (":0" picks a free port), serves handler in a
// goroutine and shuts the server down gracefully (up to 5s) when ctx ends.
// It returns the bound address, e.g. "[::]:9090" or "127.0.0.1:41234", or
// the error from listening. Errors while serving are logged (log may be nil).
func Serve(ctx context.Context, addr string, handler http.Handler, log *zap.Logger) (boundAddr string, err error) {
	if log == nil {
		log = zap.NewNop()
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("http listen on %q: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(log),
	}
	bound := l.Addr().String()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server failed", zap.String("addr", bound), zap.Error(err))
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.Warn("http server shutdown", zap.String("addr", bound), zap.Error(err))
		}
	}()
	return bound, nil
}
