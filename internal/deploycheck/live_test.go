package deploycheck

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"projector/internal/app"
	"projector/internal/config"
	"projector/internal/gen"
)

// missingMetrics scrapes url until it serves every metric of queried (at
// most a minute) and returns those it still lacks then.
func missingMetrics(url string, queried map[string][]string) map[string][]string {
	deadline := time.Now().Add(time.Minute)
	for {
		served, err := scrape(url)
		missing := map[string][]string{}
		for m, by := range queried {
			if !served[m] {
				missing[m] = by
			}
		}
		if err != nil {
			missing["(scrape error: "+err.Error()+")"] = nil
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startConsumer runs app.Run against kfake and miniredis and returns
// miniredis, the /metrics URL and a function that publishes a chunk of
// generated traffic.
func startConsumer(t *testing.T) (*miniredis.Miniredis, string, func()) {
	t.Helper()
	cfg := config.Defaults()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, cfg.Kafka.Topics...), kfake.SeedTopics(1, cfg.Kafka.DLQTopic))
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(kc.Close)
	mr := miniredis.RunT(t)
	cfg.Embedded = false
	cfg.Kafka.Brokers = kc.ListenAddrs()
	cfg.Redis.Addrs = []string{mr.Addr()}
	cfg.HTTP.Addr = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		done <- app.Run(ctx, cfg, zap.NewNop(), app.Hooks{HTTPAddr: func(a string) { addr <- a }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("consumer: %v", err)
		}
	})
	gc := gen.DefaultConfig()
	gc.PoisonRate, gc.DupRate = 0.05, 0.05
	g := gen.New(gc)
	select {
	case a := <-addr:
		return mr, "http://" + a + "/metrics", func() { publish(t, cfg, g) }
	case err := <-done:
		t.Fatalf("consumer stopped before serving HTTP: %v", err)
	}
	return nil, "", nil
}

// publish writes generated records (with poison and duplicates) to the
// input topics.
func publish(t *testing.T, cfg config.Config, g *gen.Generator) {
	t.Helper()
	msgs := make([]kafka.Message, 0, 2000)
	now := time.Now()
	for range cap(msgs) {
		r := g.Next(now)
		msgs = append(msgs, kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value})
	}
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Kafka.Brokers...), Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("publish generated records: %v", err)
	}
}

// waitFor scrapes url until it serves a sample of metric name (at most a
// minute, else the test fails).
func waitFor(t *testing.T, url, name string) {
	t.Helper()
	if missing := missingMetrics(url, map[string][]string{name: nil}); len(missing) > 0 {
		t.Fatalf("%s never appeared on %s: %v", name, url, missing)
	}
}

// scrape returns the sample names (histograms with their _bucket, _sum and
// _count suffixes) served at url.
func scrape(url string) (map[string]bool, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, errors.New(resp.Status + ": " + string(b))
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names, sc.Err()
}
