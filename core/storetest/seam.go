package storetest

import (
	"context"
	"testing"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// The seam (docs/CONTRACT.md §8.5): where history meets live capture, a
// (session, tool call id) pair is one invocation. These tests write the
// backfill's row as the migration pass does (the 'unknown' execution,
// source 'backfill') and then live frames, on every store.

// backfilled writes the row the backfill recovers for a tool call in
// flight when history was read: launched in turn 1, still in progress.
func (s *suite) backfilled(t *testing.T, sess, tool string) core.Subagent {
	t.Helper()
	row, _ := core.Normalize(
		core.Frame{
			TaskSessionID: sess,
			TaskID:        s.id("task", "t"),
			TurnID:        s.id("turn", "1"),
			ToolCallID:    s.id("tool", tool),
			ToolStatus:    "in_progress",
			ObservedAt:    at(0),
			Payload:       &core.Payload{SubagentType: "explorer", Description: "map the repo", Model: "history-model"},
		},
	)
	row.ID, row.Source = s.id("message", tool), core.SourceBackfill
	if err := s.Store.Upsert(context.Background(), row); err != nil {
		t.Fatal(err)
	}
	return row
}

// testSeamAdopts: a live frame under an execution id, for a pair whose
// only row the backfill wrote, makes one row with it, under the execution
// id: history's observation, source and turn, the frame's status, settling
// and metrics, history's values where the frame says nothing. One row, one
// invocation.
func testSeamAdopts(t *testing.T, s *suite) {
	sess := s.session(t, "seam")
	h := s.backfilled(t, sess, "1")
	uses := int64(4)
	f := core.Frame{
		TaskSessionID: sess,
		TaskID:        s.id("task", "t"),
		TurnID:        s.id("turn", "2"),
		ExecutionID:   s.id("exec", "live"),
		ToolCallID:    h.ToolCallID,
		ToolStatus:    "completed",
		ObservedAt:    at(60),
		Payload:       &core.Payload{Model: "live-model", TotalTokens: 9000, ToolUseCount: &uses},
	}
	s.write(t, f)
	got := s.one(t, sess)
	want := h
	want.AgentExecutionID, want.Model = f.ExecutionID, str("live-model")
	want.ToolStatus, want.SettledAt = str("completed"), ptrTime(at(60))
	want.EndedAt = ptrTime(at(60)) // a synchronous run ends with its tool call (docs/CONTRACT.md §3.4)
	want.TotalTokens, want.ToolUseCount = i64(9000), i64(4)
	assertRow(t, want, got)
	// A later frame of the same execution merges as into any row.
	f.ObservedAt, f.ToolStatus, f.Payload = at(90), "failed", &core.Payload{AgentID: "agent-9"}
	s.write(t, f)
	want.AgentID = str("agent-9")
	assertRow(t, want, s.one(t, sess))
}

// testSeamAdoptsOnce: once absorbed, history is that execution's row's;
// another execution reusing the tool call id gets a row of its own
// (AC-32).
func testSeamAdoptsOnce(t *testing.T, s *suite) {
	sess := s.session(t, "once")
	h := s.backfilled(t, sess, "1")
	first := s.bare(sess, "1", 30)
	first.ExecutionID = s.id("exec", "a")
	s.write(t, first)
	second := s.bare(sess, "1", 40)
	second.ExecutionID = s.id("exec", "b")
	s.write(t, second)
	rows := s.rows(t, sess)
	if len(rows) != 2 || rows[0].AgentExecutionID != first.ExecutionID || !rows[0].ObservedAt.Equal(h.ObservedAt) ||
		rows[0].Source != core.SourceBackfill || rows[1].AgentExecutionID != second.ExecutionID ||
		rows[1].Source != core.SourceLive || !rows[1].ObservedAt.Equal(at(40)) {
		t.Errorf(
			"rows %s: want history's row under %s and a live row of its own under %s", describeRows(rows), first.ExecutionID,
			second.ExecutionID,
		)
	}
}

// testSeamUnknownExecution: a frame without an execution id for a
// backfilled pair merges into the backfilled row by its key (AC-31, AC-1a)
// (it is the pair's history still); the first frame with one then absorbs
// it.
func testSeamUnknownExecution(t *testing.T, s *suite) {
	sess := s.session(t, "unknown")
	h := s.backfilled(t, sess, "1")
	f := s.bare(sess, "1", 20)
	f.ExecutionID, f.Payload.AgentID = "", "agent-1"
	s.write(t, f)
	got := s.one(t, sess)
	if got.AgentExecutionID != core.UnknownExecution || got.Source != core.SourceBackfill ||
		show(got.AgentID) != `"agent-1"` {
		t.Errorf("a frame without an execution id: %+v", got)
	}
	f.ExecutionID = s.id("exec", "1")
	s.write(t, f)
	if got := s.one(t, sess); got.AgentExecutionID != f.ExecutionID || !got.ObservedAt.Equal(h.ObservedAt) ||
		show(got.AgentID) != `"agent-1"` {
		t.Errorf("the first frame with an execution id: %+v", got)
	}
}

// testSeamLiveRowsApart: only a row the backfill wrote is absorbed; a live
// row recorded without an execution id stays apart from a frame that has
// one (AC-31: 'unknown' means unrecorded, never shared).
func testSeamLiveRowsApart(t *testing.T, s *suite) {
	sess := s.session(t, "apart")
	f := s.bare(sess, "1", 0)
	f.ExecutionID = ""
	s.write(t, f)
	f.ExecutionID = s.id("exec", "1")
	s.write(t, f)
	if rows := s.rows(t, sess); len(rows) != 2 {
		t.Errorf("rows %s: want the 'unknown' live row and the execution's row apart", describeRows(rows))
	}
}

// testSeamTakenID: the row a live frame absorbs history into keeps
// history's id (an id is assigned once, on the pair's first insert). A
// frame naming an id another pair's row holds is refused with
// ErrConstraint, as any new key with a taken id is, and nothing stored
// changes; one naming history's own id is the same invocation's row (one
// imported from a store where it had absorbed that history) and absorbs it
// (docs/CONTRACT.md §8.5).
func testSeamTakenID(t *testing.T, s *suite) {
	ctx := context.Background()
	sess := s.session(t, "taken")
	h := s.backfilled(t, sess, "1")
	row := func(tool string, sec int, id string) core.Subagent {
		f := s.bare(sess, tool, sec)
		f.ExecutionID, f.ToolStatus = s.id("exec", "a"), "completed"
		r, _ := core.Normalize(f)
		r.ID = id
		return r
	}
	other := row("2", 10, s.id("row", "2"))
	if err := s.Store.Upsert(ctx, other); err != nil {
		t.Fatal(err)
	}
	before := s.rows(t, sess)
	WantError(t, "a frame absorbing history under another pair's id", s.Store.Upsert(ctx, row("1", 20, other.ID)),
		core.ErrConstraint)
	after := s.rows(t, sess)
	if len(after) != len(before) {
		t.Fatalf("after the refused frame: rows %s, want %s", describeRows(after), describeRows(before))
	}
	for i := range before {
		if d := Diff(before[i], after[i]); len(d) > 0 || after[i].ID != before[i].ID {
			t.Errorf("after the refused frame, row %d changed: %v, id %s", i, d, after[i].ID)
		}
	}
	f := row("1", 20, h.ID)
	for range 2 { // absorbing, then merging into the row it made
		if err := s.Store.Upsert(ctx, f); err != nil {
			t.Fatalf("a frame under history's own id: %v", err)
		}
	}
	rows := s.rows(t, sess)
	want := storekit.Absorbed(f, h)
	if len(rows) != 2 || rows[0].ID != h.ID {
		t.Fatalf("rows %s: want history's row, its id %s, and the other pair's", describeRows(rows), h.ID)
	}
	assertRow(t, want, rows[0])
}
