package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"projector/internal/gen"
)

// trickle produces records slowly (chunk every 100 ms) until finish is
// called, then the rest at once: production goes on during a whole rebuild.
type trickle struct {
	produced atomic.Int64
	ranOut   atomic.Bool // every record was produced before finish
	stopCh   chan struct{}
	done     chan error
}

func startTrickle(brokers []string, recs []gen.Record, chunk int) *trickle {
	tr := &trickle{stopCh: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		w := newWriter(brokers, 1000)
		defer w.Close()
		pause := 100 * time.Millisecond
		for i := 0; i < len(recs); i += chunk {
			select {
			case <-tr.stopCh:
				chunk, pause = 1000, 0
			default:
			}
			end := min(i+chunk, len(recs))
			msgs := messages(recs[i:end])
			if err := w.WriteMessages(context.Background(), msgs...); err != nil {
				tr.done <- fmt.Errorf("produce records %d..%d: %w", i, end, err)
				return
			}
			tr.produced.Add(int64(len(msgs)))
			time.Sleep(pause)
		}
		select {
		case <-tr.stopCh:
		default:
			tr.ranOut.Store(true)
		}
		tr.done <- nil
	}()
	return tr
}

// finish produces the rest at once; it reports whether the trickle had
// already produced every record.
func (tr *trickle) finish() bool {
	ranOut := tr.ranOut.Load()
	close(tr.stopCh)
	return ranOut
}

// wait waits until every record is produced.
func (tr *trickle) wait() error { return <-tr.done }

// progressWatch samples, every 500 ms, the sum of the group's committed
// offsets and the sum of the product_views scores, and records a failure
// when either stands still for more than stallLimit while records are
// produced, or when a consumer's /readyz answers anything but 200.
type progressWatch struct {
	mu       sync.Mutex
	failures []string
	advances [2]int
	quit     chan struct{}
	done     chan struct{}
}

// stallLimit is how long the consumers' progress may stand still while records are produced.
const stallLimit = 5 * time.Second

func watchProgress(brokers, topics []string, rdb redis.UniversalClient, start time.Time, tr *trickle, readyURL string) *progressWatch {
	w := &progressWatch{quit: make(chan struct{}), done: make(chan struct{})}
	var days []string
	for d := start.Add(-37 * time.Hour).UTC().Truncate(24 * time.Hour); !d.After(start.Add(24 * time.Hour)); d = d.Add(24 * time.Hour) {
		days = append(days, "pv:{g}:"+d.Format("2006-01-02"))
	}
	go func() {
		defer close(w.done)
		client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
		names := [2]string{"the group's committed offsets", "product_views (not rebuilt)"}
		var last [2]float64
		var since [2]time.Time
		var producedAt [2]int64
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for first := true; ; first = false {
			select {
			case <-w.quit:
				return
			case <-t.C:
			}
			ctx := context.Background()
			committed, err1 := committedSum(ctx, client, topics)
			views, err2 := scoreSum(ctx, rdb, days)
			if err1 != nil || err2 != nil {
				w.fail(fmt.Sprintf("sample progress: %v %v", err1, err2))
				continue
			}
			if code, body := get(readyURL); code != 200 {
				w.fail(fmt.Sprintf("the consumer's /readyz answered %d %s", code, body))
			}
			now, produced := time.Now(), tr.produced.Load()
			for i, v := range [2]float64{float64(committed), views} {
				switch {
				case first || v != last[i]:
					if !first {
						w.mu.Lock()
						w.advances[i]++
						w.mu.Unlock()
					}
					last[i], since[i], producedAt[i] = v, now, produced
				case now.Sub(since[i]) > stallLimit && produced > producedAt[i] && !tr.ranOut.Load():
					w.fail(fmt.Sprintf("%s stood still at %.0f for %v while %d records were produced",
						names[i], v, now.Sub(since[i]).Round(time.Millisecond), produced-producedAt[i]))
					since[i] = now // one failure per stall
				}
			}
		}
	}()
	return w
}

func (w *progressWatch) fail(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures = append(w.failures, msg)
}

// stop ends the sampling and fails t for every stall, and when either
// series never advanced.
func (w *progressWatch) stop(t *testing.T) {
	t.Helper()
	close(w.quit)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.failures {
		t.Error(f)
	}
	if w.advances[0] == 0 || w.advances[1] == 0 {
		t.Errorf("during the rebuild committed offsets advanced %d times, product_views %d times; want both to advance", w.advances[0], w.advances[1])
	}
	t.Logf("during the rebuild committed offsets advanced %d times, product_views %d times (samples every 500 ms)", w.advances[0], w.advances[1])
}

// committedSum is the sum of the group's committed offsets over the topics' partitions.
func committedSum(ctx context.Context, client *kafka.Client, topics []string) (int64, error) {
	_, parts, err := endOffsets(ctx, client, topics)
	if err != nil {
		return 0, err
	}
	res, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: "projector", Topics: parts})
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, ps := range res.Topics {
		for _, p := range ps {
			sum += max(p.CommittedOffset, 0)
		}
	}
	return sum, nil
}

// scoreSum is the sum of the scores of the sorted sets keys.
func scoreSum(ctx context.Context, rdb redis.UniversalClient, keys []string) (float64, error) {
	var sum float64
	for _, k := range keys {
		zs, err := rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		if err != nil {
			return 0, err
		}
		for _, z := range zs {
			sum += z.Score
		}
	}
	return sum, nil
}
