package gen

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"
)

const logSize = 20000

func TestLogIsDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	a := New(cfg).Log(3000)
	b := New(cfg).Log(3000)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same config gave different logs")
	}
	cfg.Seed = 2
	c := New(cfg).Log(3000)
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave the same log")
	}
	if len(a) != 3000 {
		t.Fatalf("Log(3000) returned %d records", len(a))
	}
}

func TestNamesAreValid(t *testing.T) {
	for _, u := range userNames(200) {
		if err := checkName(u); err != nil {
			t.Errorf("user %q: %v", u, err)
		}
	}
	for _, p := range productNames(500) {
		if err := checkName(p); err != nil {
			t.Errorf("product %q: %v", p, err)
		}
	}
}

// TestRecordsAgainstStrictValidator checks that every poison record is
// invalid, every other record valid and consistent with its Record fields.
func TestRecordsAgainstStrictValidator(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PoisonRate = 0.05
	log := New(cfg).Log(logSize)
	poison := 0
	for i, r := range log {
		ev, err := validate(r.Value)
		if r.Poison {
			poison++
			if err == nil {
				t.Errorf("record %d (%s) flagged poison but valid: %s", i, r.Reason, r.Value)
			}
			if r.Reason == "" {
				t.Errorf("record %d: poison without reason", i)
			}
			continue
		}
		if err != nil {
			t.Errorf("record %d not flagged poison but invalid (%v): %s", i, err, r.Value)
			continue
		}
		if r.Reason != "" || r.ID != ev.ID || string(r.Key) != ev.UserID {
			t.Errorf("record %d: Record{ID %q Key %q Reason %q} vs event{id %q user %q}", i, r.ID, r.Key, r.Reason, ev.ID, ev.UserID)
		}
		want := map[string]string{"view": cfg.ViewsTopic, "history_cleared": cfg.ViewsTopic,
			"history_item_removed": cfg.ViewsTopic, "click": cfg.ClicksTopic, "order": cfg.OrdersTopic}[ev.Type]
		if r.Topic != want {
			t.Errorf("record %d: %s on topic %q, want %q", i, ev.Type, r.Topic, want)
		}
	}
	if poison == 0 {
		t.Fatal("no poison records")
	}
}

// TestEveryPoisonCaseIsInvalid builds each poison kind directly.
func TestEveryPoisonCaseIsInvalid(t *testing.T) {
	base := map[string]string{"id": `"ev-1-1"`, "type": `"view"`, "ts": "1767225600000", "user_id": `"u1"`, "product_id": `"p1"`}
	if _, err := validate(object(view(base, "", nil)...)); err != nil {
		t.Fatalf("base view invalid: %v", err)
	}
	for _, c := range poisonCases() {
		v, _ := c.build(base)
		if _, err := validate(v); err == nil {
			t.Errorf("poison case %q is valid: %s", c.reason, v)
		}
	}
}

func TestMix(t *testing.T) {
	cfg := DefaultConfig()
	log := New(cfg).Log(logSize)
	count := map[string]int{}
	byID := map[string]int{}
	for _, r := range log {
		switch {
		case r.Poison:
			count["poison"]++
			continue
		case byID[r.ID] > 0:
			count["dup"]++
			continue
		}
		byID[r.ID]++
		ev, err := validate(r.Value)
		if err != nil {
			t.Fatalf("valid record rejected: %v", err)
		}
		count[ev.Type]++
	}
	fresh := float64(logSize - count["poison"] - count["dup"])
	share := func(name string, n int, want, tol float64) {
		t.Helper()
		if got := float64(n) / fresh; got < want-tol || got > want+tol {
			t.Errorf("%s share %.4f, want %.3f±%.3f (counts %v)", name, got, want, tol, count)
		}
	}
	share("view", count["view"], 0.78, 0.02)
	share("click", count["click"], 0.12, 0.015)
	share("order", count["order"], 0.08, 0.01)
	share("history_cleared", count["history_cleared"], 0.01, 0.004)
	share("history_item_removed", count["history_item_removed"], 0.01, 0.004)
	if got := float64(count["poison"]) / logSize; got < 0.006 || got > 0.014 {
		t.Errorf("poison share %.4f, want ~0.01", got)
	}
	if got := float64(count["dup"]) / logSize; got < 0.012 || got > 0.026 {
		t.Errorf("duplicate share %.4f, want ~0.02", got)
	}
}

// TestDuplicatesAreRepublications checks that a repeated id is a byte-identical
// copy of its first record, a few hundred records later at most.
func TestDuplicatesAreRepublications(t *testing.T) {
	log := New(DefaultConfig()).Log(logSize)
	first := map[string]int{}
	dups := 0
	for i, r := range log {
		if r.ID == "" {
			continue
		}
		j, seen := first[r.ID]
		if !seen {
			first[r.ID] = i
			continue
		}
		dups++
		o := log[j]
		if r.Poison || o.Poison {
			t.Errorf("record %d: poison involved in duplicate of record %d", i, j)
		}
		if r.Topic != o.Topic || !bytes.Equal(r.Key, o.Key) || !bytes.Equal(r.Value, o.Value) {
			t.Errorf("record %d duplicates id %s of record %d but differs", i, r.ID, j)
		}
		if i-j > 400 {
			t.Errorf("record %d duplicates record %d, %d records later", i, j, i-j)
		}
	}
	if dups == 0 {
		t.Fatal("no duplicates")
	}
}

func TestTimestamps(t *testing.T) {
	cfg := DefaultConfig()
	log := New(cfg).Log(logSize)
	lo := cfg.Start.Add(-maxBackInTime).UnixMilli()
	hi := cfg.Start.Add(cfg.Span).UnixMilli()
	last := map[string]int64{}
	days := map[string]bool{}
	back, events, boundary, ties := 0, 0, 0, 0
	seen := map[string]bool{}
	for _, r := range log {
		if r.Poison || seen[r.ID] {
			continue // duplicates re-publish older events
		}
		seen[r.ID] = true
		ev, err := validate(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		events++
		if ev.TS < lo || ev.TS > hi {
			t.Errorf("ts %d outside [%d, %d]", ev.TS, lo, hi)
		}
		days[time.UnixMilli(ev.TS).UTC().Format("2006-01-02")] = true
		if ev.TS%3600000 == 0 || ev.TS%3600000 == 3599999 {
			boundary++
		}
		if l, ok := last[ev.UserID]; ok {
			switch {
			case ev.TS < l:
				back++
				if l-ev.TS > maxBackInTime.Milliseconds()+1 {
					t.Errorf("event %s goes back %v", ev.ID, time.Duration(l-ev.TS)*time.Millisecond)
				}
			case ev.TS == l:
				ties++
			}
		}
		last[ev.UserID] = max(last[ev.UserID], ev.TS)
	}
	if got := float64(back) / float64(events); got < 0.03 || got > 0.1 {
		t.Errorf("out-of-order share %.3f, want ~0.05 (plus a few boundary snaps)", got)
	}
	if len(days) < 28 {
		t.Errorf("log covers %d days, want 28+", len(days))
	}
	if boundary < 100 || ties < 50 {
		t.Errorf("%d events on hour boundaries and %d ties, want more", boundary, ties)
	}
}

func TestNextStreamsNearNow(t *testing.T) {
	g := New(DefaultConfig())
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	valid := 0
	for range 2000 {
		r := g.Next(now)
		if r.Poison {
			continue
		}
		ev, err := validate(r.Value)
		if err != nil {
			t.Fatalf("invalid streamed record: %v: %s", err, r.Value)
		}
		valid++
		if d := now.UnixMilli() - ev.TS; d < 0 || d > (time.Second+maxBackInTime).Milliseconds() {
			t.Errorf("streamed ts %s is %dms before now", strconv.FormatInt(ev.TS, 10), d)
		}
		now = now.Add(10 * time.Millisecond)
	}
	if valid < 1900 {
		t.Errorf("only %d valid records out of 2000", valid)
	}
}

func TestTinyConfig(t *testing.T) {
	cfg := Config{Seed: 7, Users: 1, Products: 2, DupRate: 0.5, PoisonRate: 0.1}
	for i, r := range New(cfg).Log(500) {
		if _, err := validate(r.Value); (err != nil) != r.Poison {
			t.Fatalf("record %d: poison=%v but validation error %v", i, r.Poison, err)
		}
	}
}

// TestMovedDuplicatesAndBackfill: with MoveDupRate, about that share of the
// duplicates of clicks and orders (never of views, which carry the history
// events in order) ask for another partition; with BackfillRate, about that
// share of events lie 9 to 40 days before the log's start.
func TestMovedDuplicatesAndBackfill(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MoveDupRate, cfg.BackfillRate = 0.5, 0.02
	log := New(cfg).Log(logSize)
	seen := map[string]bool{}
	var dups, moved, backfilled, valid int
	day := 24 * time.Hour.Milliseconds()
	for i, r := range log {
		at := cfg.Start.UnixMilli() + cfg.Span.Milliseconds()*int64(i)/int64(len(log)) // the record's place in the log
		if r.Poison {
			continue
		}
		valid++
		if seen[r.ID] && r.Topic != cfg.ViewsTopic {
			dups++
			if r.OtherPartition {
				moved++
			}
		} else if r.OtherPartition {
			t.Errorf("record %s asks for another partition but is no duplicate of a click or order", r.ID)
		}
		seen[r.ID] = true
		var ev struct{ TS int64 }
		if err := json.Unmarshal(r.Value, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.TS <= at-9*day && ev.TS > at-41*day {
			backfilled++
		}
	}
	if dups == 0 || moved < dups/4 || moved > dups*3/4 {
		t.Errorf("%d of %d duplicates of clicks and orders moved, want about half", moved, dups)
	}
	if share := float64(backfilled) / float64(valid); share < 0.01 || share > 0.04 {
		t.Errorf("%d of %d events backfilled (%.3f), want about 0.02", backfilled, valid, share)
	}
}

// TestUUIDs: with UUIDs, every event id is a 36-character version-4 UUID,
// and the log is otherwise the one without them: the same records, and the
// same ids repeated (duplicates) as often.
func TestUUIDs(t *testing.T) {
	cfg := DefaultConfig()
	plain := New(cfg).Log(3000)
	cfg.UUIDs = true
	uuids := New(cfg).Log(3000)
	for i, r := range uuids {
		if r.Topic != plain[i].Topic || r.Poison != plain[i].Poison || !bytes.Equal(r.Key, plain[i].Key) || (r.ID == "") != (plain[i].ID == "") {
			t.Fatalf("record %d differs beyond its id: %+v, without UUIDs %+v", i, r, plain[i])
		}
		if r.ID != "" && (len(r.ID) != 36 || r.ID[8] != '-' || r.ID[13] != '-' || r.ID[14] != '4' || r.ID[18] != '-' || r.ID[23] != '-') {
			t.Fatalf("record %d: id %q is not a version-4 UUID", i, r.ID)
		}
	}
	if a, b := idCounts(uuids), idCounts(plain); a != b {
		t.Errorf("ids: %v (distinct, repeats) with UUIDs, want %v as without", a, b)
	}
}

// idCounts returns the number of distinct ids in log and how many records repeat one.
func idCounts(log []Record) [2]int {
	seen := map[string]bool{}
	var out [2]int
	for _, r := range log {
		if r.ID == "" {
			continue
		}
		if seen[r.ID] {
			out[1]++
		} else {
			seen[r.ID] = true
			out[0]++
		}
	}
	return out
}
