package embedded

import (
	"context"
	"fmt"
	"net"
	"strings"
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

// report prints what the demo does: the banner (where to look), then, once
// the banner is out, release lets the held log lines through, and a
// progress line follows every opts.ReportEvery.
func report(ctx context.Context, opts Options, cfg config.Config, mr *miniredis.Miniredis, st *status, metrics <-chan *obs.Metrics, httpAddr <-chan string, release func()) {
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
	fmt.Fprint(opts.Out, banner(opts, cfg, mr.Port(), port(addr)))
	release()
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
			line := fmt.Sprintf("%s [%4.0fs] produced %.0f (%.0f/s)  applied %.0f (%.0f ev/s)  duplicates %.0f  dead-lettered %.0f  redis keys %d",
				ProgressMark, now.Sub(start).Seconds(), produced, (produced-lastProduced)/secs, applied, (applied-lastApplied)/secs,
				value(m.Duplicates), sumEvents(m, "poison"), len(mr.Keys()))
			if opts.Terminal {
				line = "\x1b[1m" + line + "\x1b[0m"
			}
			fmt.Fprintln(opts.Out, line)
			lastApplied, lastProduced, last = applied, produced, now
		}
	}
}

// ProgressMark starts every progress line of the demo.
const ProgressMark = ">>"

// banner is what the demo prints first: what runs, the dashboard, two
// redis-cli commands to try, and the in-process Kafka.
func banner(opts Options, cfg config.Config, redisPort, httpPort string) string {
	rate := fmt.Sprintf("%d generated events/s", opts.Rate)
	if opts.Rate <= 0 {
		rate = "generated events as fast as it goes"
	}
	p := cfg.Redis.KeyPrefix
	day := time.Now().In(cfg.Location).Format("2006-01-02")
	best := fmt.Sprintf("redis-cli -p %s ZREVRANGE '%sbest:{g}:%s' 0 9 WITHSCORES", redisPort, p, day)
	lv := fmt.Sprintf("redis-cli -p %s ZREVRANGE '%slv:{u:u1}' 0 -1 WITHSCORES", redisPort, p)
	w := max(len(best), len(lv))
	return fmt.Sprintf(`projector embedded demo: Kafka and Redis in this process, %s (Ctrl-C stops)
  dashboard  http://localhost:%s/   (read API /api/, metrics /metrics)
  redis      %-*s   # today's bestsellers
             %-*s   # what user u1 viewed last
  kafka      %s: %s; dead letters in %s
`, rate, httpPort, w, best, w, lv, strings.Join(cfg.Kafka.Brokers, ","), strings.Join(cfg.Kafka.Topics, ", "), cfg.Kafka.DLQTopic)
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
