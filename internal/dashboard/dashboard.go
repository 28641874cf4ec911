// Package dashboard serves the read API (package api, under /api/) and a
// live web page (/) built from static files embedded in the binary: plain
// HTML, CSS and JavaScript with SVG charts, no build step and no outside
// resources. cmd/api serves it, and so does the consumer's embedded demo.
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/config"
	"projector/internal/dashboard/api"
	"projector/internal/dashboard/status"
	"projector/internal/obs"
	"projector/pkg/query"
)

//go:embed web
var web embed.FS

// Options configure the dashboard.
type Options struct {
	// RDB is the projections' Redis.
	RDB redis.UniversalClient
	// Replica, when not nil, is where the read API reads projections from
	// (query.Options.Replica: redis.read_from replicas); the consumers'
	// status is read from RDB.
	Replica redis.UniversalClient
	// Config supplies redis.key_prefix, time_zone, projections.* and the
	// Kafka group and topics whose lag is shown.
	Config config.Config
	// Kafka measures the consumers' lag; nil leaves lag unmeasured.
	Kafka *kafka.Client
	// Registry receives the API metrics (may be nil).
	Registry prometheus.Registerer
	Log      *zap.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// New returns the routes to mount (/api/ and /) and the status monitor,
// whose Run measures lag and must be started by the caller.
func New(opts Options) ([]obs.Route, *status.Monitor) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cfg := opts.Config
	reader := query.New(opts.RDB, query.Options{KeyPrefix: cfg.Redis.KeyPrefix, Location: cfg.Location,
		Projections: cfg.Projections, Now: opts.Now, Replica: opts.Replica})
	mon := status.New(status.Options{RDB: opts.RDB, KeyPrefix: cfg.Redis.KeyPrefix, Kafka: opts.Kafka,
		Group: cfg.Kafka.GroupID, Topics: cfg.Kafka.Topics, Now: opts.Now})
	h := api.New(api.Options{Reader: reader, Status: mon, Location: cfg.Location, Now: opts.Now,
		Registry: opts.Registry, Log: opts.Log})
	return []obs.Route{{Pattern: "/api/", Handler: h}, {Pattern: "/", Handler: Page()}}, mon
}

// Page serves the dashboard: index.html at /, its assets by name, 404 else.
func Page() http.Handler {
	sub, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			if _, err := fs.Stat(sub, r.URL.Path[1:]); err != nil || r.URL.Path == "/index.html" {
				http.NotFound(w, r)
				return
			}
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
