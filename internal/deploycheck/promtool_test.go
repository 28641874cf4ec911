package deploycheck

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// rulesTests is the part of deploy/prometheus/alerts_test.yml the tests read.
type rulesTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// needProgram returns the path of a system program the test needs, failing
// the test (never skipping it) when it is missing.
func needProgram(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (%v): run make setup, it installs Debian's prometheus package", name, err)
	}
	return path
}

// TestAlertRulesPromtool checks the alerting rules with Prometheus's own
// tool: promtool check rules, and promtool test rules with
// deploy/prometheus/alerts_test.yml, whose input series make every alert
// fire and stay quiet (checked here: each alert has a test expecting it to
// fire and one expecting none).
func TestAlertRulesPromtool(t *testing.T) {
	promtool := needProgram(t, "promtool")
	dir := filepath.Join(repoRoot(t), "deploy", "prometheus")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("promtool %v in deploy/prometheus: %v\n%s", args, err, out)
		}
	}

	var rules alertRules
	readYAML(t, "deploy/prometheus/alerts.yml", &rules)
	var tests rulesTests
	readYAML(t, "deploy/prometheus/alerts_test.yml", &tests)
	if len(tests.RuleFiles) != 1 || tests.RuleFiles[0] != "alerts.yml" {
		t.Errorf("alerts_test.yml rule_files = %v, want [alerts.yml]", tests.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				quiet[at.Alertname] = true
			}
		}
	}
	known := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			known[r.Alert] = true
			if !fires[r.Alert] {
				t.Errorf("alerts_test.yml has no test in which %s fires", r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf("alerts_test.yml has no test in which %s stays quiet", r.Alert)
			}
		}
	}
	if len(known) == 0 {
		t.Fatal("alerts.yml has no alert")
	}
	for _, tested := range []map[string]bool{fires, quiet} {
		for name := range tested {
			if !known[name] {
				t.Errorf("alerts_test.yml tests %s, which alerts.yml does not define", name)
			}
		}
	}
}
