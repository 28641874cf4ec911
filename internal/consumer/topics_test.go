package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"projector/internal/obs"
)

func TestPartitionChanges(t *testing.T) {
	for _, tc := range []struct {
		old, cur                  map[string]int
		appeared, grown, vanished string
	}{
		{nil, nil, "[]", "[]", "[]"},
		{nil, map[string]int{"b": 2, "a": 1}, "[a b]", "[]", "[]"},
		{map[string]int{"a": 2, "b": 2}, map[string]int{"a": 2, "b": 2}, "[]", "[]", "[]"},
		{map[string]int{"a": 2, "b": 2}, map[string]int{"a": 4, "c": 1}, "[c]", "[a: 2 -> 4]", "[b]"},
	} {
		a, g, v := partitionChanges(tc.old, tc.cur)
		if fmt.Sprint(a) != tc.appeared || fmt.Sprint(g) != tc.grown || fmt.Sprint(v) != tc.vanished {
			t.Errorf("partitionChanges(%v, %v) = %v %v %v, want %s %s %s", tc.old, tc.cur, a, g, v, tc.appeared, tc.grown, tc.vanished)
		}
	}
}

func TestMissingReason(t *testing.T) {
	configured := []string{"views", "clicks", "orders"}
	for _, tc := range []struct {
		missing map[string]string
		want    string
	}{
		{nil, ""},
		{map[string]string{"orders": "", "views": ""}, "kafka topics do not exist yet: views, orders"},
		{map[string]string{"clicks": "Topic Authorization Failed"}, "kafka topics do not exist yet: clicks (Topic Authorization Failed)"},
		{map[string]string{"other": ""}, ""}, // not configured
	} {
		if got := missingReason(configured, tc.missing); got != tc.want {
			t.Errorf("missingReason(%v) = %q, want %q", tc.missing, got, tc.want)
		}
	}
}

// TestTopicWatchReportsChanges: one warning per change of the missing topics
// (not one per reading), the readiness condition held while any is missing
// and cleared after, partition changes waking a waiting session, and the
// pipeline's own readiness never overriding the condition.
func TestTopicWatchReportsChanges(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	health := obs.NewHealth(nil)
	health.SetReady(true, "")
	w := newTopicWatch([]string{"views", "clicks", "orders"}, health, zap.New(core))
	ctx := context.Background()
	warnings := func() []string {
		var out []string
		for _, e := range logs.FilterLevelExact(zapcore.WarnLevel).All() {
			out = append(out, fmt.Sprint(e.ContextMap()["missing"]))
		}
		return out
	}
	readiness := func() string {
		ok, reason := health.Ready()
		return fmt.Sprintf("%v %s", ok, reason)
	}

	if got := w.existing(); got != nil {
		t.Fatalf("existing() before the first reading = %v, want nil", got)
	}
	woken := make(chan map[string]int, 1)
	go func() {
		parts, _ := w.next(ctx, nil)
		woken <- parts
	}()
	for range 3 {
		w.update(topicMeta{Partitions: map[string]int{}, Missing: map[string]string{"views": "", "clicks": "", "orders": ""}})
	}
	if got := warnings(); fmt.Sprint(got) != "[[views clicks orders]]" {
		t.Fatalf("warnings after 3 readings with every topic missing: %v, want one naming all three", got)
	}
	if got := readiness(); got != "false kafka topics do not exist yet: views, clicks, orders" {
		t.Fatalf("readiness with every topic missing: %s", got)
	}
	health.SetReady(true, "") // the pipeline recovering from something else
	if ok, _ := health.Ready(); ok {
		t.Fatal("ready while topics are missing, after the pipeline set itself ready")
	}

	two := map[string]int{"views": 2, "clicks": 2}
	for range 2 {
		w.update(topicMeta{Partitions: two, Missing: map[string]string{"orders": ""}})
	}
	if got := <-woken; !maps.Equal(got, two) {
		t.Fatalf("next(nil) woke with %v, want %v", got, two)
	}
	if got := warnings(); fmt.Sprint(got) != "[[views clicks orders] [orders]]" {
		t.Fatalf("warnings after two topics appeared: %v, want a second one naming orders", got)
	}
	if got := readiness(); got != "false kafka topics do not exist yet: orders" {
		t.Fatalf("readiness with orders missing: %s", got)
	}
	if got := fmt.Sprint(w.existing()); got != "[views clicks]" {
		t.Fatalf("existing() = %s, want [views clicks]", got)
	}

	all := map[string]int{"views": 2, "clicks": 2, "orders": 1}
	w.update(topicMeta{Partitions: all, Missing: map[string]string{}})
	if got := readiness(); got != "true " {
		t.Fatalf("readiness with every topic present: %s", got)
	}
	if n := logs.FilterMessage("every configured Kafka topic exists").Len(); n != 1 {
		t.Fatalf("%d 'every topic exists' lines, want 1", n)
	}

	grown := map[string]int{"views": 4, "clicks": 2, "orders": 1}
	go func() {
		parts, _ := w.next(ctx, all)
		woken <- parts
	}()
	w.update(topicMeta{Partitions: all, Missing: map[string]string{}}) // no change: nobody wakes for good
	w.update(topicMeta{Partitions: grown, Missing: map[string]string{}})
	if got := <-woken; !maps.Equal(got, grown) {
		t.Fatalf("next(all) woke with %v, want %v", got, grown)
	}
	changes := logs.FilterMessage("Kafka topics changed: rejoining the consumer group with them").All()
	if len(changes) != 3 || fmt.Sprint(changes[2].ContextMap()["partitions_added"]) != "[views: 2 -> 4]" {
		t.Fatalf("change lines %v, want three, the last with partitions_added [views: 2 -> 4]", changes)
	}
	if got := len(warnings()); got != 2 {
		t.Fatalf("%d warnings after partitions were added, want still 2", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := w.next(cancelled, grown); ok {
		t.Fatal("next returned ok with an ended context and no change")
	}

	err := errors.New("dial tcp: connection refused")
	w.failed(err)
	w.failed(err)
	if n := logs.FilterMessage("cannot read the Kafka topics' metadata; retrying").Len(); n != 1 {
		t.Fatalf("%d lines for the same failed reading twice, want 1", n)
	}
}

// TestTopicWatchFirstReadingWakes: a session that waits before the first
// reading starts once it comes, also when every topic exists from the start
// (nothing changes after the first reading).
func TestTopicWatchFirstReadingWakes(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	w := newTopicWatch([]string{"views", "clicks"}, obs.NewHealth(nil), zap.New(core))
	cur, wake := w.state() // what next waits on before the first reading
	if cur != nil {
		t.Fatalf("a reading %v before the first update", cur)
	}
	all := map[string]int{"views": 4, "clicks": 4}
	w.update(topicMeta{Partitions: all, Missing: map[string]string{}})
	select {
	case <-wake:
	default:
		t.Fatal("the first reading did not wake the waiters")
	}
	if got, ok := w.next(context.Background(), nil); !ok || !maps.Equal(got, all) {
		t.Fatalf("next(nil) = %v %v, want %v", got, ok, all)
	}
	if n := logs.Len(); n != 0 {
		t.Fatalf("%d log lines for a first reading with every topic present, want none: %v", n, logs.All())
	}
}
