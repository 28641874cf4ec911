package consumer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"projector/internal/apply"
	"projector/internal/coord"
	"projector/internal/obs"
	"projector/internal/offsets"
)

// infoRefusingMeta is px:meta:{g} on a server whose user may not run INFO,
// holding the global watermark evidence.
type infoRefusingMeta struct {
	*fakeMeta
	evidence apply.Evidence
}

func (m *infoRefusingMeta) Identity(context.Context) (map[string]string, error) {
	return nil, errors.New("NOPERM User projector has no permissions to run the 'info' command")
}

func (m *infoRefusingMeta) ReadEvidence(context.Context) (apply.Evidence, error) {
	return m.evidence, nil
}

// A server that refuses INFO turns only the identity check off: the
// consumer says so in one warning line, and still compares the committed
// offsets with the watermarks at start (finding what Redis lost).
func TestRollbackWatchWithoutINFO(t *testing.T) {
	views0 := offsets.TopicPartition{Topic: "views", Partition: 0}
	meta := &infoRefusingMeta{fakeMeta: &fakeMeta{status: coord.StatusReady},
		evidence: apply.Evidence{Global: map[string]int64{views0.String(): 4}}}
	k := Kafka{Committed: func(context.Context) (map[offsets.TopicPartition]int64, error) {
		return map[offsets.TopicPartition]int64{views0: 10}, nil
	}}
	core, logs := observer.New(zapcore.InfoLevel)
	m := obs.NewMetrics()
	c := NewWith(Options{GroupID: "g", Topics: []string{"views"}, DLQTopic: "dlq", MaxEvents: 10, MaxWait: time.Millisecond},
		k, &fakeApplier{j: &journal{}, origins: map[string]string{}}, meta, nil, m, obs.NewHealth(m), zap.New(core))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs := make(chan []lost, 4)
	done := make(chan struct{})
	go func() { c.watchRollback(ctx, jobs); close(done) }()
	select {
	case ls := <-jobs:
		if len(ls) != 1 || ls[0].Topic != "views" || ls[0].From != 5 || ls[0].To != 9 {
			t.Errorf("lost %v, want views:0 offsets 5-9", ls)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no comparison at start while INFO is refused")
	}
	time.Sleep(2*identityEvery + identityEvery/2) // two more looks at the servers' identity
	cancel()
	<-done
	warnings := logs.FilterMessageSnippet("redis refused INFO").All()
	if len(warnings) != 1 {
		t.Fatalf("%d warnings about INFO, want one", len(warnings))
	}
	if w := warnings[0]; w.Level != zapcore.WarnLevel || !strings.Contains(w.Message, "server-identity check") {
		t.Errorf("warning %q at %v, want a warning naming the server-identity check", w.Message, w.Level)
	}
}
