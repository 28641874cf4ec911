package deploycheck

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// dashboard is the part of the Grafana dashboard JSON the tests read.
type dashboard struct {
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// alertRules is the part of deploy/prometheus/alerts.yml the tests read.
type alertRules struct {
	Groups []struct {
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// dashboardExprs returns every panel's expressions, failing on a panel
// without any.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(readRepoFile(t, "deploy/grafana/projector.json"), &d); err != nil {
		t.Fatalf("parse deploy/grafana/projector.json: %v", err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard has uid %q and %d panels", d.UID, len(d.Panels))
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) != "" {
				out[p.Title] = append(out[p.Title], tg.Expr)
			}
		}
		if len(out[p.Title]) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	return out
}

// TestDashboardCoversTheMetrics checks that the dashboard shows every metric
// an operator watches: throughput, lag, duplicates, dead letters, batch
// latency, the errors of each system and the data-lost flag.
func TestDashboardCoversTheMetrics(t *testing.T) {
	var all []string
	for _, exprs := range dashboardExprs(t) {
		all = append(all, exprs...)
	}
	used := metricsIn(all...)
	for _, want := range []string{
		"projector_events_total",                  // throughput
		"projector_consumer_lag",                  // lag per partition
		"projector_duplicates_total",              // duplicates
		"projector_dead_lettered_total",           // dead-lettered
		"projector_batch_duration_seconds_bucket", // batch latency
		"projector_redis_errors_total",            // Redis errors
		"projector_kafka_commit_errors_total",     // Kafka commit errors
		"projector_dead_letter_errors_total",      // dead-letter topic errors
		"projector_redis_data_lost",               // data-lost flag
	} {
		if !slices.Contains(used, want) {
			t.Errorf("no dashboard panel queries %s (queried: %v)", want, used)
		}
	}
}

// TestPrometheusConfig checks that prometheus.yml parses, scrapes the
// consumers on their metrics port and loads the alerting rules.
func TestPrometheusConfig(t *testing.T) {
	var p struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName      string `yaml:"job_name"`
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "deploy/prometheus/prometheus.yml", &p)
	if !slices.Contains(p.RuleFiles, "/etc/prometheus/alerts.yml") {
		t.Errorf("rule_files = %v, want /etc/prometheus/alerts.yml (deploy/prometheus is mounted there)", p.RuleFiles)
	}
	found := false
	for _, sc := range p.ScrapeConfigs {
		for _, d := range sc.DNSSDConfigs {
			found = found || (slices.Contains(d.Names, "consumer") && d.Port == 9090)
		}
	}
	if !found {
		t.Error("no scrape config discovers every consumer replica (dns_sd_configs names [consumer], port 9090)")
	}
}

// TestQueriedMetricsExist runs a consumer against an in-process Kafka
// broker and Redis with generated traffic (duplicates and poison included)
// and a spell of Redis errors, scrapes its /metrics and checks that every
// metric queried by a dashboard panel or an alerting rule is served.
func TestQueriedMetricsExist(t *testing.T) {
	queried := map[string][]string{}
	for title, exprs := range dashboardExprs(t) {
		for _, m := range metricsIn(exprs...) {
			queried[m] = append(queried[m], "panel "+title)
		}
	}
	var rules alertRules
	readYAML(t, "deploy/prometheus/alerts.yml", &rules)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range metricsIn(r.Expr) {
				queried[m] = append(queried[m], "alert "+r.Alert)
			}
		}
	}
	mr, metricsURL, publish := startConsumer(t)
	publish()
	// Redis errors appear only while Redis fails: make it fail while the
	// consumer applies more records until it has counted some errors, then
	// let it recover.
	// projector_events_total (labelled) appears once a batch was applied; a
	// histogram such as projector_batch_events is served from the start, so
	// waiting for it let the errors begin before the consumer's first
	// readiness check, which then never passed (a flake under load).
	waitFor(t, metricsURL, "projector_events_total")
	mr.SetError("ERR injected by deploycheck")
	publish()
	waitFor(t, metricsURL, "projector_redis_errors_total")
	mr.SetError("")
	for m, by := range missingMetrics(metricsURL, queried) {
		t.Errorf("%s (queried by %v) is not on the consumer's /metrics", m, by)
	}
}
