package deploycheck

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestPrometheusEvaluatesRules runs a real Prometheus (Debian's
// /usr/bin/prometheus) on loopback that scrapes a running consumer every
// second and loads deploy/prometheus/alerts.yml: every rule evaluates with
// health ok over the consumer's metrics, and while Redis fails the consumer
// goes not ready, ProjectorNotReady turns pending for its instance, and the
// failures are counted as Redis errors, not as Kafka commit or dead-letter
// errors. Bounded to a minute.
func TestPrometheusEvaluatesRules(t *testing.T) {
	bin := needProgram(t, "prometheus")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mr, metricsURL, publish := startConsumer(t)
	publish()
	waitFor(t, metricsURL, "projector_events_total")
	target, err := url.Parse(metricsURL)
	if err != nil {
		t.Fatalf("parse %s: %v", metricsURL, err)
	}
	prom := startPrometheus(ctx, t, bin, target.Host)

	var rules alertRules
	readYAML(t, "deploy/prometheus/alerts.yml", &rules)
	want := 0
	for _, g := range rules.Groups {
		want += len(g.Rules)
	}
	prom.waitUntil(ctx, "every rule evaluated with health ok", func() (bool, string) {
		return prom.rulesHealthy(want)
	})
	prom.waitUntil(ctx, "the consumer scraped and ready, ProjectorNotReady not pending", func() (bool, string) {
		ready := prom.query(`projector_ready{job="projector-consumer"} == 1`)
		alerts := prom.query(`ALERTS{alertname="ProjectorNotReady"}`)
		return len(ready) == 1 && len(alerts) == 0, fmt.Sprintf("ready %v, alerts %v", ready, alerts)
	})

	mr.SetError("ERR injected by deploycheck")
	defer mr.SetError("")
	publish()
	prom.waitUntil(ctx, "ProjectorNotReady pending for the consumer", func() (bool, string) {
		alerts := prom.query(`ALERTS{alertname="ProjectorNotReady",alertstate="pending"}`)
		return len(alerts) == 1 && alerts[0].Metric["instance"] == target.Host, fmt.Sprintf("alerts %v", alerts)
	})
	prom.waitUntil(ctx, "Redis errors counted", func() (bool, string) {
		errs := prom.query(`sum(projector_redis_errors_total) > 0`)
		return len(errs) == 1, fmt.Sprintf("redis errors %v", errs)
	})
	for _, q := range []string{`projector_kafka_commit_errors_total`, `projector_dead_letter_errors_total`} {
		res := prom.query(q)
		if len(res) != 1 || res[0].Value[1] != "0" {
			t.Errorf("%s = %v while only Redis failed, want one series at 0", q, res)
		}
	}
}

// prometheus is a running Prometheus server.
type prometheus struct {
	t    *testing.T
	base string // http://127.0.0.1:port
}

// startPrometheus writes a configuration that scrapes target (job
// projector-consumer) every second and loads the repository's alerting
// rules, starts bin on a free loopback port and waits until it is ready.
// The server is stopped when the test ends.
func startPrometheus(ctx context.Context, t *testing.T, bin, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	rulesFile := filepath.Join(repoRoot(t), "deploy", "prometheus", "alerts.yml")
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: projector-consumer
    static_configs: [{targets: [%q]}]
`, rulesFile, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatalf("write %s: %v", cfgFile, err)
	}
	addr := freeLoopbackAddr(t)
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	logFile := filepath.Join(dir, "prometheus.log")
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatalf("create %s: %v", logFile, err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		log.Close()
		if out, _ := os.ReadFile(logFile); t.Failed() {
			t.Logf("prometheus output:\n%s", out)
		}
	})
	p := &prometheus{t: t, base: "http://" + addr}
	p.waitUntil(ctx, "prometheus ready", func() (bool, string) {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return p
}

// freeLoopbackAddr returns a loopback address with a port that was free.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitUntil polls cond every 200ms until it holds, failing the test with
// cond's last word when ctx ends first.
func (p *prometheus) waitUntil(ctx context.Context, what string, cond func() (bool, string)) {
	p.t.Helper()
	for {
		ok, last := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("waiting for %s: %v; last: %s", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// sample is one series of an instant query's result.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"` // [unix time, "value"]
}

// query runs an instant query; an error of the API counts as no result.
func (p *prometheus) query(q string) []sample {
	var res struct {
		Status string `json:"status"`
		Data   struct {
			Result []sample `json:"result"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/query?query="+url.QueryEscape(q), &res); err != nil || res.Status != "success" {
		return nil
	}
	return res.Data.Result
}

// rulesHealthy reports whether Prometheus holds want rules, each evaluated
// with health ok, and otherwise what it holds.
func (p *prometheus) rulesHealthy(want int) (bool, string) {
	var res struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/rules", &res); err != nil {
		return false, err.Error()
	}
	n, ok := 0, true
	var bad []string
	for _, g := range res.Data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				ok = false
				bad = append(bad, fmt.Sprintf("%s: %s %s", r.Name, r.Health, r.LastError))
			}
		}
	}
	return ok && n == want, fmt.Sprintf("%d rules (want %d), not ok: %v", n, want, bad)
}

// get decodes the JSON answer of GET base+path into out.
func (p *prometheus) get(path string, out any) error {
	resp, err := http.Get(p.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
