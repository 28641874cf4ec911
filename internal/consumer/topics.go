package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"projector/internal/obs"
)

// Topics are watched, not left to kafka-go: its group leader reads the
// partitions of every subscribed topic in one request and assigns nothing at
// all when one topic is missing (the request's first topic error wins), and
// its partition watcher ends every generation at once while a topic is
// missing. So the reader subscribes to the configured topics that exist, and
// a topicWatch polls their metadata; when a topic appears or vanishes or a
// topic gains partitions, the consumer starts a new session with a new
// reader (see session).

// topicPoll is how often the topics' metadata is read.
const topicPoll = 2 * time.Second

// topicsCondition names the readiness condition held while topics are missing.
const topicsCondition = "topics"

// topicMeta is what the metadata says of the configured topics.
type topicMeta struct {
	// Partitions maps each configured topic that can be consumed to its
	// number of partitions.
	Partitions map[string]int
	// Missing maps each configured topic that cannot be consumed to why:
	// "" when it does not exist, else the broker's error for it.
	Missing map[string]string
}

// readTopicMeta reads the metadata of topics. kafka.Client asks with
// allow_auto_topic_creation false, so a broker that creates topics on
// demand does not create them for this request: the consumer never creates
// its input topics (the producers or the operator do).
func readTopicMeta(ctx context.Context, client *kafka.Client, topics []string) (topicMeta, error) {
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return topicMeta{}, fmt.Errorf("read metadata of topics %v: %w", topics, err)
	}
	m := topicMeta{Partitions: map[string]int{}, Missing: map[string]string{}}
	for _, t := range meta.Topics {
		if !slices.Contains(topics, t.Name) {
			continue
		}
		switch {
		case errors.Is(t.Error, kafka.UnknownTopicOrPartition) || t.Error == nil && len(t.Partitions) == 0:
			m.Missing[t.Name] = ""
		case t.Error != nil:
			m.Missing[t.Name] = errorTitle(t.Error)
		default:
			m.Partitions[t.Name] = len(t.Partitions)
		}
	}
	for _, t := range topics {
		if _, ok := m.Partitions[t]; !ok {
			if _, ok := m.Missing[t]; !ok {
				m.Missing[t] = ""
			}
		}
	}
	return m, nil
}

// errorTitle is a Kafka error's short title, or the error's text.
func errorTitle(err error) string {
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		return kerr.Title()
	}
	return err.Error()
}

// missingReason is the readiness reason for the missing topics, in the
// configured order; "" when none is missing.
func missingReason(configured []string, missing map[string]string) string {
	var names []string
	for _, t := range configured {
		why, ok := missing[t]
		if !ok {
			continue
		}
		if why != "" {
			t += " (" + why + ")"
		}
		names = append(names, t)
	}
	if len(names) == 0 {
		return ""
	}
	return "kafka topics do not exist yet: " + strings.Join(names, ", ")
}

// partitionChanges describes how the consumable topics moved from old to
// cur: topics that appeared, topics that gained partitions ("t: 2 -> 4"),
// topics that vanished, each sorted by name.
func partitionChanges(old, cur map[string]int) (appeared, grown, vanished []string) {
	for t, n := range cur {
		switch o, ok := old[t]; {
		case !ok:
			appeared = append(appeared, t)
		case n != o:
			grown = append(grown, fmt.Sprintf("%s: %d -> %d", t, o, n))
		}
	}
	for t := range old {
		if _, ok := cur[t]; !ok {
			vanished = append(vanished, t)
		}
	}
	slices.Sort(appeared)
	slices.Sort(grown)
	slices.Sort(vanished)
	return appeared, grown, vanished
}

// topicWatch holds the latest topic metadata and tells sessions when the
// consumable topics change. Its methods are safe for concurrent use.
type topicWatch struct {
	topics []string // configured, in order
	health *obs.Health
	log    *zap.Logger

	mu      sync.Mutex
	cur     *topicMeta    // nil until the first read
	changed chan struct{} // closed and replaced when cur.Partitions change
	lastErr string        // the last read error logged, so it is logged once
}

func newTopicWatch(topics []string, health *obs.Health, log *zap.Logger) *topicWatch {
	return &topicWatch{topics: topics, health: health, log: log, changed: make(chan struct{})}
}

// run reads the metadata with read at once and then every topicPoll until
// ctx ends. A failed read keeps the last metadata (Kafka may be restarting).
func (w *topicWatch) run(ctx context.Context, read func(context.Context) (topicMeta, error)) {
	t := time.NewTicker(topicPoll)
	defer t.Stop()
	for {
		m, err := read(ctx)
		if err == nil {
			w.update(m)
		} else if ctx.Err() == nil {
			w.failed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// failed logs a failed read once, until another error or a success.
func (w *topicWatch) failed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if msg := err.Error(); msg != w.lastErr {
		w.lastErr = msg
		w.log.Warn("cannot read the Kafka topics' metadata; retrying", zap.Error(err), zap.Duration("every", topicPoll))
	}
}

// update takes a new reading: it logs a warning when the set of missing
// topics changes (once per change, not per reading), holds the readiness
// condition while topics are missing, logs partition changes, and wakes
// the waiters of next on the first reading and whenever the consumable
// topics change.
func (w *topicWatch) update(m topicMeta) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastErr = ""
	first := w.cur == nil
	var old topicMeta
	if !first {
		old = *w.cur
	}
	w.cur = &m
	reason := missingReason(w.topics, m.Missing)
	if reason != missingReason(w.topics, old.Missing) {
		w.health.SetCondition(topicsCondition, reason)
		if reason != "" {
			w.log.Warn("configured Kafka topics do not exist: consuming the others; each is consumed once it is created",
				zap.Strings("missing", w.ordered(m.Missing)), zap.String("reason", reason))
		} else {
			w.log.Info("every configured Kafka topic exists", zap.Strings("topics", w.topics))
		}
	}
	if !first {
		appeared, grown, vanished := partitionChanges(old.Partitions, m.Partitions)
		if len(appeared)+len(grown)+len(vanished) == 0 {
			return
		}
		w.log.Info("Kafka topics changed: rejoining the consumer group with them", zap.Strings("appeared", appeared),
			zap.Strings("partitions_added", grown), zap.Strings("vanished", vanished))
	}
	// The first reading wakes the waiters too: Run may wait for it already.
	close(w.changed)
	w.changed = make(chan struct{})
}

// ordered returns the configured topics that are keys of m, in order.
func (w *topicWatch) ordered(m map[string]string) []string {
	var out []string
	for _, t := range w.topics {
		if _, ok := m[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

// next waits until the consumable topics differ from old (nil or empty:
// until some topic can be consumed) and returns their partition counts; it
// returns false when ctx ends first.
func (w *topicWatch) next(ctx context.Context, old map[string]int) (map[string]int, bool) {
	for {
		cur, changed := w.state()
		if cur != nil && !maps.Equal(cur.Partitions, old) {
			return cur.Partitions, true
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-changed:
		}
	}
}

// state returns the latest reading (nil before the first) and a channel
// closed when the next reading that wakes waiters is taken.
func (w *topicWatch) state() (*topicMeta, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur, w.changed
}

// existing returns the configured topics that exist, in order; nil before
// the first reading.
func (w *topicWatch) existing() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		return nil
	}
	var out []string
	for _, t := range w.topics {
		if _, ok := w.cur.Partitions[t]; ok {
			out = append(out, t)
		}
	}
	return out
}
