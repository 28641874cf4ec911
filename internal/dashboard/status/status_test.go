package status

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"projector/internal/coord"
	"projector/internal/fingerprint"
	"projector/internal/testing/testredis"
)

func TestStatusFromRedisAndKafka(t *testing.T) {
	ctx := context.Background()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "views"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	w := &kafka.Writer{Addr: kafka.TCP(kc.ListenAddrs()...), BatchTimeout: time.Millisecond,
		Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })}
	for i := range 10 {
		if err := w.WriteMessages(ctx, kafka.Message{Topic: "views", Value: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.Close()
	client := &kafka.Client{Addr: kafka.TCP(kc.ListenAddrs()...), Timeout: 5 * time.Second}
	if _, err := client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: "g", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"views": {{Partition: 0, Offset: 4}}}}); err != nil {
		t.Fatal(err)
	}

	srv := testredis.StartStandalone(t)
	rdb := srv.Client()
	now := time.UnixMilli(1_800_000_000_000)
	rdb.HSet(ctx, "p:px:meta:{g}", "status", "ready", "hold:trending", "*")
	rdb.HSet(ctx, fingerprint.Key("p:"), "host/1", fmt.Sprintf(`{"at_ms":%d}`, now.Add(-2*time.Second).UnixMilli()),
		"host/2", fmt.Sprintf(`{"at_ms":%d}`, now.Add(-time.Minute).UnixMilli()))

	m := New(Options{RDB: rdb, KeyPrefix: "p:", Kafka: client, Group: "g", Topics: []string{"views"},
		Interval: time.Hour, Now: func() time.Time { return now }})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { m.Run(runCtx); close(done) }()
	var s Status
	for range 200 {
		if s, err = m.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if s.Lag.MeasuredAt != 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if s.Projections != "ready" || len(s.Holds) != 1 || s.Holds[0] != "trending" {
		t.Fatalf("meta: %+v", s)
	}
	if s.Alive != 1 || len(s.Consumers) != 2 || !s.Consumers[0].Alive || s.Consumers[1].Alive {
		t.Fatalf("consumers: %+v", s.Consumers)
	}
	want := []Partition{{Topic: "views", Partition: 0, End: 10, Committed: 4, Lag: 6}, {Topic: "views", Partition: 1, End: 0, Committed: -1, Lag: 0}}
	if s.Lag.Total != 6 || fmt.Sprint(s.Lag.Partitions) != fmt.Sprint(want) || s.Lag.Error != "" {
		t.Fatalf("lag: %+v, want total 6 and %+v", s.Lag, want)
	}
}

func TestStatusWithoutKafkaOrProjections(t *testing.T) {
	srv := testredis.StartStandalone(t)
	m := New(Options{RDB: srv.Client()})
	m.Run(context.Background()) // returns at once without Kafka
	s, err := m.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Projections != "missing" || s.Alive != 0 || s.Lag.Error == "" {
		t.Fatalf("status: %+v", s)
	}
}

// TestRebuildProgress: the projections being rebuilt come with the
// replayer's progress, for a rebuild next to running consumers (`rebuild`)
// and a replay after data loss (status rebuilding, `replay_plan`); a
// progress older than StallAfter is stalled.
func TestRebuildProgress(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	now := time.UnixMilli(1_800_000_000_000)
	m := New(Options{RDB: rdb, Now: func() time.Time { return now }})
	rdb.HSet(ctx, "px:meta:{g}", "status", "ready", "rebuild", "last_viewed,stats", coord.FieldDone, 420, coord.FieldTotal, 1000,
		coord.FieldRate, 100, coord.FieldUpdatedMs, now.Add(-time.Second).UnixMilli())
	s, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Rebuild{Projection: "last_viewed", Done: 420, Total: 1000, Percent: 42, Rate: 100, ETASeconds: 6, UpdatedMs: now.Add(-time.Second).UnixMilli()}
	if len(s.Rebuilding) != 2 || s.Rebuilding[0] != want || s.Rebuilding[1].Projection != "stats" || s.Rebuilding[1].Stalled {
		t.Fatalf("rebuilding %+v, want %+v and stats", s.Rebuilding, want)
	}

	rdb.HDel(ctx, "px:meta:{g}", "rebuild")
	rdb.HSet(ctx, "px:meta:{g}", "status", "rebuilding", coord.FieldPlan, `{"projections":["bestsellers","trending"],"spans":[]}`,
		coord.FieldUpdatedMs, now.Add(-StallAfter-time.Second).UnixMilli())
	if s, err = m.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.Rebuilding) != 2 || s.Rebuilding[0].Projection != "bestsellers" || s.Rebuilding[1].Projection != "trending" || !s.Rebuilding[0].Stalled {
		t.Fatalf("replay after data loss: %+v, want bestsellers and trending, stalled", s.Rebuilding)
	}

	rdb.HSet(ctx, "px:meta:{g}", "status", "ready")
	if s, err = m.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.Rebuilding) != 0 {
		t.Fatalf("ready without rebuild: %+v", s.Rebuilding)
	}
}
