package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"projector/internal/config"
	"projector/internal/obs"
	"projector/internal/testing/testredis"
)

// chromiumBin is Debian's chromium package.
const chromiumBin = "/usr/bin/chromium"

// startDashboard serves the dashboard over a seeded redis-server and a
// kfake broker holding 50 unconsumed records (lag 50).
func startDashboard(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv := testredis.StartStandalone(t)
	now := time.Now().UTC()
	seed(t, srv.Client(), now)

	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "shop.views", "shop.clicks", "shop.orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	w := &kafka.Writer{Addr: kafka.TCP(kc.ListenAddrs()...), BatchTimeout: time.Millisecond, Balancer: &kafka.RoundRobin{}}
	for i := range 50 {
		if err := w.WriteMessages(ctx, kafka.Message{Topic: "shop.views", Value: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.Close()

	cfg := config.Defaults()
	cfg.Redis.KeyPrefix = "shop:"
	routes, mon := New(Options{RDB: srv.Client(), Config: cfg, Kafka: &kafka.Client{Addr: kafka.TCP(kc.ListenAddrs()...), Timeout: 5 * time.Second},
		Registry: prometheus.NewRegistry(), Now: func() time.Time { return now }})
	go mon.Run(ctx)
	health := obs.NewHealth(nil)
	health.SetReady(true, "")
	hs := httptest.NewServer(obs.NewMux(prometheus.NewRegistry(), health, routes...))
	t.Cleanup(hs.Close)
	// Wait for the first lag measurement so the page shows it.
	for range 100 {
		if s, err := mon.Status(ctx); err == nil && s.Lag.MeasuredAt != 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return hs.URL
}

// chromium runs headless Chromium with extra arguments on url and returns
// stdout and stderr.
func chromium(t *testing.T, url string, args ...string) (string, string) {
	t.Helper()
	if _, err := os.Stat(chromiumBin); err != nil {
		t.Fatalf("%s is missing (install Debian's chromium package: apt-get install chromium): %v", chromiumBin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=5000", "--window-size=1280,1600", "--user-data-dir=" + t.TempDir(),
		"--no-first-run", "--disable-extensions", "--disable-dev-shm-usage"}
	cmd := exec.CommandContext(ctx, chromiumBin, append(append(base, args...), url)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr:\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

// consoleLine matches Chromium's log lines of page console messages and
// uncaught exceptions.
var consoleLine = regexp.MustCompile(`(?m)^.*(CONSOLE|Uncaught|ERR_).*$`)

// cspViolation matches Chromium's console report of a Content Security
// Policy violation ("Executing inline script violates the following Content
// Security Policy directive ...", "Refused to load ...").
var cspViolation = regexp.MustCompile(`(?m)^.*CONSOLE.*(Content Security Policy|Refused to).*$`)

func TestDashboardInHeadlessChromium(t *testing.T) {
	base := startDashboard(t)
	url := base + "/?user=u1&product=sku-002"
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); csp != obs.ContentSecurityPolicy {
		t.Fatalf("the page's Content-Security-Policy is %q, want %q", csp, obs.ContentSecurityPolicy)
	}
	dom, stderr := chromium(t, url, "--dump-dom")
	if bad := cspViolation.FindAllString(stderr, -1); len(bad) > 0 {
		t.Errorf("Content Security Policy violations:\n%s", strings.Join(bad, "\n"))
	}
	if bad := consoleLine.FindAllString(stderr, -1); len(bad) > 0 {
		t.Errorf("console messages or load errors:\n%s", strings.Join(bad, "\n"))
	}
	for _, want := range []string{
		`data-loaded="true"`,                // the first refresh finished
		`<div id="errors" hidden=""></div>`, // no error reported by the page
		"sku-001",                           // bestsellers today and this week
		"sku-hot",                           // trending
		"ord-9019",                          // recent orders
		"sku-seen-1",                        // u1's last viewed and history
		"ord-u1-1", "$19.99",                // u1's order documents
		"consumer-host-1/411", "projections ready · 2 consumers · lag 50", // consumer health and lag
		"<svg", // charts
		`data-projection="last_viewed"><b>last_viewed</b> rebuilding 42.0% <progress max="1000000" value="420000"></progress> 420,000 / 1,000,000 records · 25,000 ev/s · ETA 24s`,
		`data-projection="stats"><b>stats</b> rebuilding 42.0%`, // the rebuilds with progress
		// the product lookup of the address
		`data-ranking="bestsellers-today" data-rank="2"><h3>Bestsellers today</h3><div class="rank-line"><b>#2</b> of 30 · 50 units</div>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM lacks %q", want)
		}
	}
	views := regexp.MustCompile(`data-stat="views"><span class="label">views today</span><span class="value">([0-9,]+)<`).FindStringSubmatch(dom)
	if views == nil || views[1] == "–" || !strings.Contains(dom, "1,") {
		t.Errorf("views counter not filled: %v", views)
	}
	if t.Failed() {
		t.Logf("DOM:\n%s\nchromium stderr:\n%s", dom, stderr)
	}

	checkProductLookup(t, base)

	shot := os.Getenv("E2E_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(os.TempDir(), "projector-dashboard.png")
	}
	chromium(t, url, "--screenshot="+shot)
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (size %v)", shot, err, st)
	}
	t.Logf("dashboard screenshot: %s", shot)
}

// checkProductLookup types product ids into the dashboard's product lookup
// and checks the ranks shown: sku-003 is third in today's and the week's
// bestsellers and in today's views, fourth in trending (after sku-hot,
// sku-001 and sku-002); sku-999 is in no ranking.
func checkProductLookup(t *testing.T, base string) {
	t.Helper()
	b := startBrowser(t)
	b.open(base + "/")
	shown := func(product string) []string {
		t.Helper()
		b.waitFor(`document.getElementById("product-ranks").dataset.product === "` + product + `"`)
		var lines []string
		b.eval(`[...document.querySelectorAll("#product-ranks .rank-box")].map((box) => box.dataset.ranking + " " + box.dataset.rank + ": " +
			box.querySelector(".rank-line").textContent + [...box.querySelectorAll("tr.me td")].map((td) => " | " + td.textContent).join(""))`, &lines)
		return lines
	}
	b.typeInto("#product", "sku-003")
	want := []string{
		"bestsellers-today 3: #3 of 30 · 33 units | 3 | sku-003 | 33",
		"bestsellers-week 3: #3 of 30 · 1,135 score | 3 | sku-003 | 1,135",
		"most-viewed-today 3: #3 of 30 · 1,021 views | 3 | sku-003 | 1,021",
		"trending 4: #4 of 13 · 14.17 weighted views | 4 | sku-003 | 14.17",
	}
	if got := shown("sku-003"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("product lookup of sku-003 shows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var neighbours []string
	b.eval(`[...document.querySelectorAll('#product-ranks [data-ranking="bestsellers-today"] tr td:nth-child(2)')].map((td) => td.textContent)`, &neighbours)
	if strings.Join(neighbours, " ") != "sku-001 sku-002 sku-003 sku-004 sku-005" {
		t.Errorf("neighbours of sku-003 in today's bestsellers: %v, want sku-001 to sku-005", neighbours)
	}
	b.typeInto("#product", "sku-999")
	if got := strings.Join(shown("sku-999"), "\n"); got != "bestsellers-today none: not ranked\nbestsellers-week none: not ranked\nmost-viewed-today none: not ranked\ntrending none: not ranked" {
		t.Errorf("product lookup of sku-999 shows\n%s\nwant \"not ranked\" in each ranking", got)
	}
	var state struct {
		Search string `json:"search"`
		Errors string `json:"errors"`
	}
	b.eval(`({search: location.search, errors: document.getElementById("errors").textContent})`, &state)
	if state.Search != "?product=sku-999" || state.Errors != "" {
		t.Errorf("after the lookups: address %q, errors %q", state.Search, state.Errors)
	}
}

func TestPageServesOnlyItsFiles(t *testing.T) {
	h := Page()
	for path, code := range map[string]int{"/": 200, "/dashboard.js": 200, "/dashboard.css": 200, "/index.html": 404, "/nope": 404, "/web/index.html": 404} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != code {
			t.Errorf("GET %s: %d, want %d", path, rec.Code, code)
		}
	}
}
