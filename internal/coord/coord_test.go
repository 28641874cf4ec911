package coord

import (
	"context"
	"strings"
	"testing"
	"time"

	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// TestTransitions walks the protocol's states on a real server: a first
// start, a chase rebuild (start, resume, busy, pause, hand back), a hold
// rebuild (hold, cut at the watermarks, release), rolled_back, and a replay
// after data loss.
func TestTransitions(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	now := time.UnixMilli(1_800_000_000_000)
	m := New(rdb, "", func() time.Time { return now })
	if st, _ := m.Status(ctx); st != "" {
		t.Fatalf("status of a missing hash: %q", st)
	}
	if ok, status, err := m.Pause(ctx, "P0", []string{"stats"}); err != nil || ok || status != "" {
		t.Fatalf("pause of a missing hash: %v, status %q, %v; want refused", ok, status, err)
	}
	if created, err := m.Init(ctx, Info("g", "UTC", []string{"stats"})); err != nil || !created {
		t.Fatalf("init: %v %v", created, err)
	}
	if created, _ := m.Init(ctx, nil); created {
		t.Fatal("init created the hash twice")
	}
	if st, _ := m.Read(ctx); st.Status != StatusReady || st.Fields[FieldGroup] != "g" || st.Int(FieldCreatedMs) != now.UnixMilli() {
		t.Fatalf("after init: %v", st.Fields)
	}

	// A chase rebuild: start, then the same again resumes, another is busy.
	lease, err := m.AcquireLease(ctx, "me", LeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AcquireLease(ctx, "other", LeaseTTL); err == nil || !strings.Contains(err.Error(), "another replayer is running") {
		t.Fatalf("second lease: %v", err)
	}
	names := []string{"last_viewed", "stats"}
	if st, err := m.StartRebuild(ctx, names, "R1", "S1"); err != nil || !st.Started {
		t.Fatalf("start: %+v %v", st, err)
	}
	if tok, _ := m.Token(ctx); tok != "S1" {
		t.Fatalf("sync token %q", tok)
	}
	st, _ := m.Read(ctx)
	if h := st.Holds.Names(); strings.Join(h, ",") != "last_viewed,stats" || st.Holds["stats"] != nil {
		t.Fatalf("holds %v", st.Holds)
	}
	if got := st.Rebuilding(); strings.Join(got, ",") != "last_viewed,stats" {
		t.Fatalf("rebuilding %v", got)
	}
	if err := m.MarkWiped(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.StartRebuild(ctx, names, "R2", "S2"); !st.Resume || st.ID != "R1" || !st.Wiped {
		t.Fatalf("a rerun: %+v, want resume of R1, wiped", st)
	}
	if st, _ := m.StartRebuild(ctx, []string{"orders"}, "R3", "S3"); st.Busy != "last_viewed,stats" {
		t.Fatalf("another selection: %+v, want busy", st)
	}
	if ok, status, err := m.Pause(ctx, "P1", names); err != nil || !ok {
		t.Fatalf("pause: %q %v", status, err)
	}
	if s, _ := m.Status(ctx); s != StatusPaused {
		t.Fatalf("status while paused with the lease: %q", s)
	}
	if tok, _ := m.Token(ctx); tok != "P1" {
		t.Fatalf("pause token %q", tok)
	}
	rdb.HSet(ctx, "px:wm:{g}", "t:0", 5)
	wms := map[string]string{"t:0": "5"}
	rdb.HSet(ctx, "px:wm:{g}", "t:0", 6) // a consumer completed a batch
	if got, _ := m.HandBack(ctx, "P1", lease, wms, names); got != WatermarksMoved {
		t.Fatalf("hand back after a watermark moved: %v", got)
	}
	if got, _ := m.HandBack(ctx, "P0", lease, map[string]string{"t:0": "6"}, names); got != PauseLost {
		t.Fatalf("hand back with another pause: %v", got)
	}
	if got, err := m.HandBack(ctx, "P1", lease, map[string]string{"t:0": "6"}, names); err != nil || got != HandedBack {
		t.Fatalf("hand back: %v %v", got, err)
	}
	st, _ = m.Read(ctx)
	if st.Status != StatusReady || len(st.Holds) > 0 || st.Fields[FieldRebuild] != "" || st.Fields[FieldSync] != "" {
		t.Fatalf("after the hand back: %v", st.Fields)
	}
	lease.Release(ctx)
	if held, _ := m.Held(ctx); held {
		t.Fatal("lease held after release")
	}

	// A hold rebuild: the cut is the consumers' watermarks, -1 without one.
	if err := m.HoldAllOf(ctx, []string{"trending"}); err != nil {
		t.Fatal(err)
	}
	upTo, err := m.CutHolds(ctx, []string{"trending"}, []string{"t:0", "t:1"})
	if err != nil || upTo["t:0"] != 6 || upTo["t:1"] != -1 {
		t.Fatalf("cut: %v %v", upTo, err)
	}
	st, _ = m.Read(ctx)
	w := projections.Write{Projection: "trending"}
	if !st.Holds.Skip(&w, "t:0", 6) || st.Holds.Skip(&w, "t:0", 7) || st.Holds.Skip(&w, "t:1", 0) {
		t.Fatalf("holds after the cut: %v", st.Holds)
	}
	rdb.HSet(ctx, "px:wm:{g}", "t:0", 5) // Redis went back in time: not released
	if ok, _ := m.ReleaseHolds(ctx, []string{"trending"}, upTo); ok {
		t.Fatal("released below the cut")
	}
	rdb.HSet(ctx, "px:wm:{g}", "t:0", 6)
	if ok, err := m.ReleaseHolds(ctx, []string{"trending"}, upTo); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if st, _ := m.Read(ctx); len(st.Holds) > 0 || st.Fields[FieldRebuild] != "" {
		t.Fatalf("after the release: %v", st.Fields)
	}

	// rolled_back, then a replay after data loss.
	if err := m.MarkRolledBack(ctx, "lost t:0 3-5"); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Read(ctx); st.Status != StatusRolledBack || st.Fields[FieldRolledBackReason] != "lost t:0 3-5" {
		t.Fatalf("rolled back: %v", st.Fields)
	}
	if ok, status, _ := m.Pause(ctx, "P2", names); ok || status != StatusRolledBack {
		t.Fatalf("pause while rolled back: %v, status %q", ok, status)
	}
	if err := m.StartReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.MarkRolledBack(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Read(ctx); st.Status != StatusRebuilding || st.Interrupted() != "" || strings.Join(st.Rebuilding(), ",") != "all" {
		t.Fatalf("replay started: %v", st.Fields)
	}
	if err := m.RecordPlan(ctx, `{"projections":["stats"]}`); err != nil {
		t.Fatal(err)
	}
	if err := m.PublishProgress(ctx, 5, 10, 2, now); err != nil {
		t.Fatal(err)
	}
	st, _ = m.Read(ctx)
	if st.Interrupted() == "" || strings.Join(st.Rebuilding(), ",") != "stats" || st.Progress() != (Progress{Done: 5, Total: 10, Rate: 2, UpdatedMs: now.UnixMilli()}) {
		t.Fatalf("replay running: %v", st.Fields)
	}
	if err := m.FinishReplay(ctx, 10, Info("g", "UTC", []string{"stats"})); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Read(ctx); st.Status != StatusReady || st.Fields[FieldPlan] != "" || st.Fields[FieldDone] != "" || st.Int(FieldReplayedRecords) != 10 {
		t.Fatalf("replay finished: %v", st.Fields)
	}
}

// TestPauseWithoutLeaseIsReady: a pause whose replayer's lease is gone (it
// died) does not stop the consumers; the holds stay.
func TestPauseWithoutLeaseIsReady(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	m := New(rdb, "shop:", time.Now)
	if _, err := m.Init(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ok, status, err := m.Pause(ctx, "P", []string{"stats"}); err != nil || !ok {
		t.Fatalf("pause: %q %v", status, err)
	}
	if s, _ := m.Status(ctx); s != StatusReady {
		t.Fatalf("status of a pause without a lease: %q, want ready", s)
	}
	if Effective(StatusPaused, true) != StatusPaused || Effective(StatusRebuilding, false) != StatusRebuilding {
		t.Fatal("Effective changes more than a pause without a lease")
	}
	if m.Key() != "shop:px:meta:{g}" {
		t.Fatalf("key %q", m.Key())
	}
}

// TestExpect: a replayer's check that the meta hash still holds what it set
// fails once Redis went back to before it.
func TestExpect(t *testing.T) {
	ctx := context.Background()
	rdb := testredis.StartStandalone(t).Client()
	m := New(rdb, "", time.Now)
	if _, err := m.Init(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := m.StartRebuild(ctx, []string{"stats"}, "R1", "S1"); err != nil || !st.Started {
		t.Fatalf("start: %+v %v", st, err)
	}
	if err := m.MarkWiped(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := m.Fields(ctx, FieldRebuildID, FieldRebuildWiped, HoldField("stats"))
	if err != nil || want[FieldRebuildID] != "R1" || want[FieldRebuildWiped] == "" || want[HoldField("stats")] != HoldAll {
		t.Fatalf("fields %v, %v", want, err)
	}
	if err := m.Expect(ctx, want); err != nil {
		t.Fatalf("expect right after: %v", err)
	}
	rdb.HDel(ctx, m.Key(), FieldRebuildWiped) // Redis back to before the wipe
	if err := m.Expect(ctx, want); err == nil || !strings.Contains(err.Error(), "went back in time") {
		t.Fatalf("expect after the wipe was lost: %v", err)
	}
}
