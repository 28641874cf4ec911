package embedded

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"projector/internal/config"
	"projector/internal/obs"
	"projector/pkg/events"
)

// status is shared between the generator and the reporter.
type status struct {
	produced atomic.Int64
}

// report prints what the demo does: where things are, then progress lines.
func report(ctx context.Context, opts Options, cfg config.Config, mr *miniredis.Miniredis, st *status, metrics <-chan *obs.Metrics, httpAddr <-chan string) {
	var m *obs.Metrics
	select {
	case m = <-metrics:
	case <-ctx.Done():
		return
	}
	addr := ""
	select {
	case addr = <-httpAddr:
	case <-ctx.Done():
		return
	}
	day := time.Now().In(cfg.Location).Format("2006-01-02")
	p := cfg.Redis.KeyPrefix
	fmt.Fprintf(opts.Out, `projector embedded demo
  in-process Kafka   %v  (topics %v, dead letters %s)
  in-process Redis   %s
  dashboard          http://localhost:%s/   read API http://localhost:%s/api/
  metrics            http://%s/metrics   readiness http://%s/readyz
  look at the keys:
    redis-cli -p %s ZREVRANGE '%sbest:{g}:%s' 0 9 WITHSCORES     # today's bestsellers
    redis-cli -p %s ZREVRANGE '%spv:{g}:%s' 0 9 WITHSCORES       # most viewed today
    redis-cli -p %s GET '%sst:{g}:views:%s'                      # views today
    redis-cli -p %s ZREVRANGE '%slv:{u:u1}' 0 -1 WITHSCORES       # what user u1 viewed last
  Ctrl-C stops.
`, cfg.Kafka.Brokers, cfg.Kafka.Topics, cfg.Kafka.DLQTopic, mr.Addr(), port(addr), port(addr), addr, addr,
		mr.Port(), p, day, mr.Port(), p, day, mr.Port(), p, day, mr.Port(), p)
	t := time.NewTicker(opts.ReportEvery)
	defer t.Stop()
	start := time.Now()
	var lastApplied, lastProduced float64
	last := start
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			applied := sumEvents(m, "applied")
			produced := float64(st.produced.Load())
			secs := now.Sub(last).Seconds()
			fmt.Fprintf(opts.Out, "[%4.0fs] produced %.0f (%.0f/s)  applied %.0f (%.0f ev/s)  duplicates %.0f  dead-lettered %.0f  redis keys %d\n",
				now.Sub(start).Seconds(), produced, (produced-lastProduced)/secs, applied, (applied-lastApplied)/secs,
				value(m.Duplicates), sumEvents(m, "poison"), len(mr.Keys()))
			lastApplied, lastProduced, last = applied, produced, now
		}
	}
}

// sumEvents adds projector_events_total over the types for one outcome.
func sumEvents(m *obs.Metrics, outcome string) float64 {
	n := value(m.Events.WithLabelValues("unknown", outcome))
	for _, t := range events.Types {
		n += value(m.Events.WithLabelValues(string(t), outcome))
	}
	return n
}

func value(c prometheus.Metric) float64 {
	var d dto.Metric
	if err := c.Write(&d); err != nil || d.Counter == nil {
		return 0
	}
	return d.Counter.GetValue()
}

// port is the port of a host:port address ("9090" of "[::]:9090").
func port(addr string) string {
	if _, p, err := net.SplitHostPort(addr); err == nil {
		return p
	}
	return addr
}
