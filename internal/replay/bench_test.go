package replay

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"projector/internal/gen"
	"projector/internal/testing/testredis"
)

// BenchmarkReplay replays a generated log (b.N records, the generator's mix)
// from an in-process broker into a real redis-server, all projections on.
// Run: go test -run '^$' -bench Replay -benchtime 50000x ./internal/replay
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	srv := testredis.StartStandalone(b)
	gc := gen.DefaultConfig()
	gc.Start, gc.Span = time.Now().Add(-48*time.Hour), 48*time.Hour
	cfg := logInKfake(b, 4, gen.New(gc).Log(b.N))
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
