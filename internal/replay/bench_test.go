package replay

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"projector/internal/config"
	"projector/internal/gen"
	"projector/internal/testredis"
)

// BenchmarkReplay replays a generated log (b.N records, the generator's mix)
// from an in-process broker into a real redis-server, all projections on.
// Run: go test -run '^$' -bench Replay -benchtime 50000x ./internal/replay
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	topics := []string{"shop.views", "shop.clicks", "shop.orders"}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topics...), kfake.SeedTopics(1, "shop.dlq"))
	if err != nil {
		b.Fatal(err)
	}
	defer kc.Close()
	srv := testredis.StartStandalone(b)
	gc := gen.DefaultConfig()
	gc.Start, gc.Span = time.Now().Add(-48*time.Hour), 48*time.Hour
	log := gen.New(gc).Log(b.N)
	w := &kafka.Writer{Addr: kafka.TCP(kc.ListenAddrs()...), Balancer: &kafka.Hash{}, BatchSize: 1000, BatchTimeout: time.Millisecond}
	for i := 0; i < len(log); i += 5000 {
		var msgs []kafka.Message
		for _, r := range log[i:min(i+5000, len(log))] {
			msgs = append(msgs, kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
	cfg := config.Defaults()
	cfg.Embedded = false
	cfg.Kafka.Brokers = kc.ListenAddrs()
	cfg.Redis.Addrs = []string{srv.Addr()}
	b.ResetTimer()
	sum, err := Run(ctx, cfg, Options{ToLatest: true}, zap.NewNop())
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if sum.Events != int64(b.N) {
		b.Fatalf("replayed %d of %d records", sum.Events, b.N)
	}
	b.ReportMetric(float64(sum.Events)/sum.Duration.Seconds(), "events/s")
}
