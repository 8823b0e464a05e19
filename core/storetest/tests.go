package storetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/await"
)

// frame is a complete, realistic completion frame for one key.
func (s *suite) frame(sess, tool string) core.Frame {
	uses := int64(7)
	return core.Frame{
		TaskSessionID: sess, TaskID: s.id("task", "t"), TurnID: s.id("turn", "1"),
		ExecutionID: s.id("exec", "1"), ToolCallID: s.id("tool", tool),
		ToolStatus: "in_progress", ObservedAt: at(0),
		Payload: &core.Payload{
			Description: "review auth", Prompt: "not stored", SubagentType: "security-reviewer",
			Status: "running", AgentID: "agent-1", Model: "claude-sonnet-4-5", ChildSessionID: "child-1",
			DurationMs: 1200, TotalTokens: 5000, ToolUseCount: &uses,
		},
	}
}

func testFirstInsert(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	f := s.frame(sess, "1")
	s.write(t, f)
	got := s.one(t, sess)
	want := core.Subagent{
		TaskSessionID: sess, TaskID: f.TaskID, TurnID: str(f.TurnID), AgentExecutionID: f.ExecutionID,
		ToolCallID: f.ToolCallID, SubagentType: str("security-reviewer"), Description: str("review auth"),
		AgentID: str("agent-1"), ChildSessionID: str("child-1"), Model: str("claude-sonnet-4-5"),
		AgentStatus: str("running"), ToolStatus: str("in_progress"), TotalTokens: i64(5000),
		ToolUseCount: i64(7), DurationMs: i64(1200), Source: core.SourceLive, ObservedAt: at(0),
	}
	assertRow(t, want, got)
	if got.ID == "" {
		t.Error("id is empty: the store must assign a UUID on insert")
	}
	if got.UpdatedAt.IsZero() {
		t.Error("updated_at is zero")
	}
}

func testSameKeyMerge(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	f := s.frame(sess, "1")
	s.write(t, f)
	first := s.one(t, sess)
	f.ObservedAt = at(5)
	s.write(t, f)
	s.write(t, f) // duplicated frame
	second := s.one(t, sess)
	if second.ID != first.ID {
		t.Errorf("id changed from %s to %s: a later frame must update the same row", first.ID, second.ID)
	}
	if !second.UpdatedAt.After(first.UpdatedAt) && !second.UpdatedAt.Equal(first.UpdatedAt) {
		t.Errorf("updated_at went back from %v to %v", first.UpdatedAt, second.UpdatedAt)
	}
}

// nullableColumns lists, for AC-4, how to set each nullable column through a
// frame and how to read it back.
var nullableColumns = []struct {
	name string
	set  func(f *core.Frame)
	get  func(r core.Subagent) any
}{
	{"turn_id", func(f *core.Frame) { f.TurnID = "turn-x" }, func(r core.Subagent) any { return show(r.TurnID) }},
	{
		"parent_tool_call_id",
		func(f *core.Frame) { f.ParentToolCallID = "parent-x" },
		func(r core.Subagent) any { return show(r.ParentToolCallID) },
	},
	{
		"subagent_type",
		func(f *core.Frame) { f.Payload.SubagentType = "explorer" },
		func(r core.Subagent) any { return show(r.SubagentType) },
	},
	{
		"description",
		func(f *core.Frame) { f.Payload.Description = "find it" },
		func(r core.Subagent) any { return show(r.Description) },
	},
	{
		"agent_id",
		func(f *core.Frame) { f.Payload.AgentID = "ag-x" },
		func(r core.Subagent) any { return show(r.AgentID) },
	},
	{
		"child_session_id",
		func(f *core.Frame) { f.Payload.ChildSessionID = "ch-x" },
		func(r core.Subagent) any { return show(r.ChildSessionID) },
	},
	{
		"model",
		func(f *core.Frame) { f.Payload.Model = "gpt-5-codex" },
		func(r core.Subagent) any { return show(r.Model) },
	},
	{
		"agent_status",
		func(f *core.Frame) { f.Payload.Status = "completed" },
		func(r core.Subagent) any { return show(r.AgentStatus) },
	},
	{
		"tool_status",
		func(f *core.Frame) { f.ToolStatus = "in_progress" },
		func(r core.Subagent) any { return show(r.ToolStatus) },
	},
	{
		"total_tokens",
		func(f *core.Frame) { f.Payload.TotalTokens = 275717 },
		func(r core.Subagent) any { return show(r.TotalTokens) },
	},
	{
		"tool_use_count",
		func(f *core.Frame) { f.Payload.ToolUseCount = i64(0) },
		func(r core.Subagent) any { return show(r.ToolUseCount) },
	},
	{
		"duration_ms",
		func(f *core.Frame) { f.Payload.DurationMs = 61000 },
		func(r core.Subagent) any { return show(r.DurationMs) },
	},
	{
		"settled_at",
		func(f *core.Frame) { f.ToolStatus = "completed" },
		func(r core.Subagent) any { return showTime(r.SettledAt) },
	},
}

// bare is a frame carrying identity only: every optional field absent.
func (s *suite) bare(sess, tool string, sec int) core.Frame {
	return core.Frame{TaskSessionID: sess, TaskID: s.id("task", "t"), ExecutionID: s.id("exec", "1"),
		ToolCallID: s.id("tool", tool), ObservedAt: at(sec), Payload: &core.Payload{}}
}

func testFillForward(t *testing.T, s *suite) {
	for _, col := range nullableColumns {
		t.Run(col.name, func(t *testing.T) {
			sess := s.session(t, "ff-"+col.name)
			f := s.bare(sess, "1", 0)
			col.set(&f)
			s.write(t, f)
			learned := col.get(s.one(t, sess))
			if learned == "NULL" {
				t.Fatalf("%s not stored by the first frame", col.name)
			}
			// Absent, then explicitly empty/zero: neither blanks it (AC-4, AC-7a).
			s.write(t, s.bare(sess, "1", 1))
			empty := s.bare(sess, "1", 2)
			empty.Payload = nil
			s.write(t, empty)
			if got := col.get(s.one(t, sess)); got != learned {
				t.Errorf("%s: want %v kept, got %v", col.name, learned, got)
			}
		})
	}
}

func testNonEmptyReplaces(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	f := s.frame(sess, "1")
	s.write(t, f)
	f.ObservedAt = at(3)
	f.ParentToolCallID = "parent-2"
	f.ToolStatus = "pending"
	f.Payload = &core.Payload{SubagentType: "planner", Description: "new label", AgentID: "agent-2",
		ChildSessionID: "child-2", Model: "claude-opus-4", Status: "async_launched",
		TotalTokens: 9000, DurationMs: 3000, ToolUseCount: i64(11)}
	s.write(t, f)
	got := s.one(t, sess)
	want := got
	want.ParentToolCallID, want.SubagentType, want.Description = str("parent-2"), str("planner"), str("new label")
	want.AgentID, want.ChildSessionID, want.Model = str("agent-2"), str("child-2"), str("claude-opus-4")
	want.AgentStatus, want.ToolStatus = str("async_launched"), str("pending")
	want.TotalTokens, want.DurationMs, want.ToolUseCount = i64(9000), i64(3000), i64(11)
	want.ObservedAt = at(0) // AC-1a: first observation stays
	assertRow(t, want, got)
	// AC-7a/AC-9: zero or negative tokens/duration never erase a learned value.
	f.ObservedAt = at(4)
	f.Payload = &core.Payload{TotalTokens: -1, DurationMs: -5, ToolUseCount: i64(-2)}
	s.write(t, f)
	assertRow(t, want, s.one(t, sess))
}

func testTurn(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	f := s.frame(sess, "1")
	first := f.TurnID
	s.write(t, f)
	f.TurnID = s.id("turn", "2")
	f.ObservedAt = at(1)
	s.write(t, f)
	if got := s.one(t, sess); show(got.TurnID) != show(&first) {
		t.Errorf("turn_id: want first turn %q, got %s", first, show(got.TurnID))
	}
	// A stored NULL turn is filled by a later non-empty one.
	sess2 := s.session(t, "b")
	g := s.bare(sess2, "1", 0)
	s.write(t, g)
	if got := s.one(t, sess2); got.TurnID != nil {
		t.Fatalf("turn_id: want NULL, got %s", show(got.TurnID))
	}
	g.TurnID = s.id("turn", "late")
	s.write(t, g)
	if got := s.one(t, sess2); show(got.TurnID) != show(&g.TurnID) {
		t.Errorf("turn_id: want %q filled, got %s", g.TurnID, show(got.TurnID))
	}
	rows, err := s.Store.ListByTurn(context.Background(), g.TurnID, core.Page{})
	if err != nil || len(rows) != 1 {
		t.Errorf("list by filled turn: %d rows, err %v; want 1", len(rows), err)
	}
}

func testSettledWriteOnce(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	f := s.frame(sess, "1")
	f.ToolStatus = "completed"
	f.ObservedAt = at(10)
	s.write(t, f)
	f.ToolStatus = "error"
	f.ObservedAt = at(20)
	s.write(t, f)
	got := s.one(t, sess)
	if showTime(got.SettledAt) != showTime(&[]time.Time{at(10)}[0]) {
		t.Errorf(
			"settled_at: want %s (first terminal frame), got %s", showTime(&[]time.Time{at(10)}[0]), showTime(got.SettledAt),
		)
	}
	if show(got.ToolStatus) != show(str("completed")) {
		t.Errorf("tool_status: want the first terminal value \"completed\", got %s", show(got.ToolStatus))
	}
}

func testFrozenToolStatus(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	f := s.bare(sess, "1", 10)
	f.ToolStatus = "completed"
	s.write(t, f)
	late := s.bare(sess, "1", 20)
	late.ToolStatus = "in_progress"
	late.Payload.Model = "late-model"
	late.Payload.TotalTokens = 42
	s.write(t, late)
	got := s.one(t, sess)
	if show(got.ToolStatus) != show(str("completed")) || showTime(got.SettledAt) != showTime(&[]time.Time{at(10)}[0]) {
		t.Errorf(
			"after settling: want tool_status completed at %s, got %s at %s", showTime(&[]time.Time{at(10)}[0]),
			show(got.ToolStatus), showTime(got.SettledAt),
		)
	}
	if show(got.Model) != show(str("late-model")) || show(got.TotalTokens) != show(i64(42)) {
		t.Errorf("after settling other columns still fill: model %s tokens %s", show(got.Model), show(got.TotalTokens))
	}
}

func testNeverSettled(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	f := s.bare(sess, "1", 0)
	f.ToolStatus = "pending"
	s.write(t, f)
	f.ToolStatus = "in_progress"
	f.Payload.Status = "running"
	f.ObservedAt = at(1)
	s.write(t, f)
	got := s.one(t, sess)
	if got.SettledAt != nil || show(got.ToolStatus) != show(str("in_progress")) ||
		show(got.AgentStatus) != show(str("running")) {
		t.Errorf("never-settled row: want settled_at NULL, last statuses in_progress/running; got %s %s/%s",
			showTime(got.SettledAt), show(got.ToolStatus), show(got.AgentStatus))
	}
}

func testUnknownAgentStatus(t *testing.T, s *suite) {
	for i, status := range []string{"completed", "failed", "Totally-New_status ✓", "async_launched"} {
		sess := s.session(t, fmt.Sprint("st", i))
		f := s.bare(sess, "1", 0)
		f.Payload.Status = status
		f.ToolStatus = "in_progress"
		s.write(t, f)
		got := s.one(t, sess)
		if show(got.AgentStatus) != show(&status) || got.SettledAt != nil {
			t.Errorf(
				"agent_status %q: want stored verbatim and unsettled, got %s settled_at %s", status, show(got.AgentStatus),
				showTime(got.SettledAt),
			)
		}
	}
}

func testIsAsyncSticky(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	f := s.bare(sess, "1", 0)
	s.write(t, f)
	if s.one(t, sess).IsAsync {
		t.Fatal("is_async: want false by default")
	}
	f.Payload.IsAsync = true
	s.write(t, f)
	f.Payload.IsAsync = false
	s.write(t, f)
	if !s.one(t, sess).IsAsync {
		t.Error("is_async went back from true to false")
	}
}

func testWriteOnceOverBackfill(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	row, _ := core.Normalize(s.bare(sess, "1", 0))
	row.Source = core.SourceBackfill
	if err := s.Store.Upsert(context.Background(), row); err != nil {
		t.Fatal(err)
	}
	first := s.one(t, sess)
	f := s.frame(sess, "1")
	f.TaskID = s.id("task", "other")
	f.ObservedAt = at(30)
	s.write(t, f)
	got := s.one(t, sess)
	if got.ID != first.ID || got.Source != core.SourceBackfill || !got.ObservedAt.Equal(at(0)) ||
		got.TaskID != row.TaskID || got.AgentExecutionID != row.AgentExecutionID {
		t.Errorf("write-once columns changed: id %s→%s source %s observed_at %s task_id %s execution %s",
			first.ID, got.ID, got.Source, showTime(&got.ObservedAt), got.TaskID, got.AgentExecutionID)
	}
	if show(got.Model) != show(str("claude-sonnet-4-5")) {
		t.Errorf("a live frame still fills a backfilled row: model %s", show(got.Model))
	}
}

func testNested(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	parent := s.frame(sess, "parent")
	child := s.frame(sess, "child")
	child.ParentToolCallID = parent.ToolCallID
	s.write(t, parent)
	s.write(t, child)
	rows := s.rows(t, sess)
	if len(rows) != 2 {
		t.Fatalf("want parent and nested rows, got %d", len(rows))
	}
	var found bool
	for _, r := range rows {
		if r.ToolCallID == child.ToolCallID {
			found = show(r.ParentToolCallID) == show(&parent.ToolCallID)
		}
	}
	if !found {
		t.Errorf("nested row lost its parent_tool_call_id %q", parent.ToolCallID)
	}
}

func testAsyncLaunched(t *testing.T, s *suite) {
	// docs/CONTRACT.md §3.2: 75% of real traffic. All three metrics NULL,
	// never 0.
	sess := s.session(t, "a")
	f := s.bare(sess, "1", 0)
	f.ToolStatus = "completed"
	f.Payload = &core.Payload{
		Description:  "bg",
		SubagentType: "general-purpose",
		Status:       "async_launched",
		IsAsync:      true,
		AgentID:      "a1",
	}
	s.write(t, f)
	got := s.one(t, sess)
	if got.TotalTokens != nil || got.ToolUseCount != nil || got.DurationMs != nil {
		t.Errorf("async_launched: want all metrics NULL, got tokens %s uses %s duration %s",
			show(got.TotalTokens), show(got.ToolUseCount), show(got.DurationMs))
	}
	if !got.IsAsync || show(got.AgentStatus) != show(str("async_launched")) {
		t.Errorf("async_launched: is_async %v agent_status %s", got.IsAsync, show(got.AgentStatus))
	}
}

func testMetricValues(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	f := s.bare(sess, "1", 0)
	f.Payload.ToolUseCount = i64(0)
	f.Payload.TotalTokens = math.MaxInt64
	f.Payload.DurationMs = math.MaxInt64 - 1
	s.write(t, f)
	got := s.one(t, sess)
	if show(got.ToolUseCount) != show(i64(0)) {
		t.Errorf("AC-8: reported tool_use_count 0 must be stored as 0, got %s", show(got.ToolUseCount))
	}
	if show(got.TotalTokens) != show(i64(math.MaxInt64)) || show(got.DurationMs) != show(i64(math.MaxInt64-1)) {
		t.Errorf("64-bit metrics: tokens %s duration %s", show(got.TotalTokens), show(got.DurationMs))
	}
}

func testCrossExecution(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	early := s.frame(sess, "shared")
	early.ExecutionID = s.id("exec", "early")
	later := s.frame(sess, "shared")
	later.ExecutionID = s.id("exec", "later")
	later.TurnID = s.id("turn", "later")
	later.ObservedAt = at(100)
	later.Payload.Model = "model-later"
	s.write(t, early)
	s.write(t, later)
	var before core.Subagent
	for _, r := range s.rows(t, sess) {
		if r.AgentExecutionID == later.ExecutionID {
			before = r
		}
	}
	// A late frame of the earlier execution.
	late := early
	late.ObservedAt = at(200)
	late.ToolStatus = "completed"
	late.Payload = &core.Payload{Model: "model-early-late", TotalTokens: 1}
	s.write(t, late)
	rows := s.rows(t, sess)
	if len(rows) != 2 {
		t.Fatalf("AC-32: want two rows for two executions, got %d", len(rows))
	}
	for _, r := range rows {
		if r.AgentExecutionID == later.ExecutionID {
			assertRow(t, before, r)
			if r.ID != before.ID {
				t.Errorf("later execution's id changed")
			}
		} else if show(r.Model) != show(str("model-early-late")) {
			t.Errorf("earlier execution's row not updated: model %s", show(r.Model))
		}
	}
}

func testOrdering(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	turn := s.id("turn", "ord")
	// Inserted out of order; ties on observed_at broken by tool_call_id,
	// then agent_execution_id.
	specs := []struct {
		tool, exec string
		sec        int
	}{{"c", "1", 5}, {"b", "2", 5}, {"b", "1", 5}, {"a", "1", 9}, {"z", "1", 1}, {"m", "1", 5}}
	for _, sp := range specs {
		f := s.bare(sess, sp.tool, sp.sec)
		f.ExecutionID = s.id("exec", sp.exec)
		f.TurnID = turn
		s.write(t, f)
	}
	want := []string{"z/1", "b/1", "b/2", "c/1", "m/1", "a/1"}
	label := func(r core.Subagent) string {
		return r.ToolCallID[len(s.id("tool", "")):] + "/" + r.AgentExecutionID[len(s.id("exec", "")):]
	}
	check := func(name string, rows []core.Subagent, want []string) {
		t.Helper()
		var got []string
		for _, r := range rows {
			got = append(got, label(r))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: want order %v, got %v", name, want, got)
		}
	}
	check("by session", s.rows(t, sess), want)
	byTurn, err := s.Store.ListByTurn(context.Background(), turn, core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	check("by turn", byTurn, want)
	// Keyset paging walks the same order in pages, whatever the ids.
	var paged []core.Subagent
	page := core.Page{Limit: 4}
	for range 10 {
		rows, err := s.Store.ListBySession(context.Background(), sess, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > page.Limit {
			t.Fatalf("page of %d rows exceeds limit %d", len(rows), page.Limit)
		}
		paged = append(paged, rows...)
		if len(rows) < page.Limit {
			break
		}
		c := rows[len(rows)-1].Cursor()
		page.After = &c
	}
	check("paged", paged, want)
	_, err = s.Store.ListBySession(context.Background(), sess, core.Page{Limit: -1})
	WantError(t, "negative limit", err, nil)
}

func testConcurrentSameKey(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	const n = 32
	frames := make([]core.Frame, n)
	for i := range frames {
		f := s.bare(sess, "1", i)
		f.TurnID = s.id("turn", fmt.Sprint(i%3))
		f.Payload.Model = fmt.Sprint("m", i)
		f.Payload.TotalTokens = int64(100 + i)
		f.Payload.IsAsync = i == 7
		if i%5 == 4 {
			f.ToolStatus = "completed"
		} else {
			f.ToolStatus = "in_progress"
		}
		frames[i] = f
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for _, f := range frames {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := await.Within(start, await.Limit); err != nil {
				errs <- err
				return
			}
			row, _ := core.Normalize(f)
			errs <- s.Store.Upsert(context.Background(), row)
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent upsert failed: %v", err)
		}
	}
	got := s.one(t, sess)
	observed := map[string]bool{}
	terminalAt := map[string]bool{}
	for _, f := range frames {
		observed[showTime(&f.ObservedAt)] = true
		if f.ToolStatus == "completed" {
			terminalAt[showTime(&f.ObservedAt)] = true
		}
	}
	if !observed[showTime(&got.ObservedAt)] || got.Source != core.SourceLive {
		t.Errorf("observed_at %s/source %s is not one frame's", showTime(&got.ObservedAt), got.Source)
	}
	if got.SettledAt == nil || !terminalAt[showTime(got.SettledAt)] || show(got.ToolStatus) != show(str("completed")) {
		t.Errorf(
			"settled_at %s tool_status %s: want a terminal frame's time and value",
			showTime(got.SettledAt),
			show(got.ToolStatus),
		)
	}
	if !got.IsAsync || got.TurnID == nil || got.Model == nil || got.TotalTokens == nil || *got.TotalTokens < 100 {
		t.Errorf(
			"invariants broken: is_async %v turn %s model %s tokens %s", got.IsAsync, show(got.TurnID), show(got.Model),
			show(got.TotalTokens),
		)
	}
}

func testConcurrentFanOut(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	var wg sync.WaitGroup
	errs := make(chan error, 8*3)
	for i := range 8 {
		for dup := range 3 { // each child's frames duplicated, all at once
			wg.Add(1)
			go func() {
				defer wg.Done()
				f := s.frame(sess, fmt.Sprint(i))
				f.ObservedAt = at(dup)
				row, _ := core.Normalize(f)
				errs <- s.Store.Upsert(context.Background(), row)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent fan-out upsert failed: %v", err)
		}
	}
	if rows := s.rows(t, sess); len(rows) != 8 {
		t.Errorf("8-way fan-out: want 8 rows, got %d", len(rows))
	}
}

func testCascade(t *testing.T, s *suite) {
	if s.DeleteSession == nil {
		t.Skip("harness supplies no DeleteSession: cascade not tested on this adapter")
	}
	gone, kept := s.session(t, "gone"), s.session(t, "kept")
	s.write(t, s.frame(gone, "1"))
	s.write(t, s.frame(gone, "2"))
	s.write(t, s.frame(kept, "1"))
	if err := s.DeleteSession(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	if rows := s.rows(t, gone); len(rows) != 0 {
		t.Errorf("AC-16: %d rows survived their session's deletion", len(rows))
	}
	if rows := s.rows(t, kept); len(rows) != 1 {
		t.Errorf("another session's rows changed: %d", len(rows))
	}
}

func testTimePrecision(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	local := time.FixedZone("UTC+5:30", 5*3600+1800)
	cases := []time.Time{
		time.Date(2026, 1, 2, 3, 4, 5, 999999000, local),
		time.Date(2026, 1, 2, 3, 4, 5, 100000000, time.UTC), // trailing zeros
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),         // no fraction
		time.Date(2026, 12, 31, 23, 59, 59, 1000, time.UTC), // one microsecond
	}
	for i, ts := range cases {
		f := s.bare(sess, fmt.Sprint(i), 0)
		f.ObservedAt = ts.Add(789 * time.Nanosecond) // below precision: truncated
		f.ToolStatus = "completed"
		s.write(t, f)
	}
	rows := s.rows(t, sess)
	if len(rows) != len(cases) {
		t.Fatalf("want %d rows, got %d", len(cases), len(rows))
	}
	for _, r := range rows {
		var i int
		fmt.Sscan(r.ToolCallID[len(s.id("tool", "")):], &i)
		want := cases[i].UTC()
		if !r.ObservedAt.Equal(want) || r.SettledAt == nil || !r.SettledAt.Equal(want) {
			t.Errorf("time %d: want %s, got observed %s settled %s", i, want.Format(time.RFC3339Nano),
				showTime(&r.ObservedAt), showTime(r.SettledAt))
		}
	}
}

func testInvalidRow(t *testing.T, s *suite) {
	sess := s.session(t, "a")
	s.write(t, s.frame(sess, "1"))
	before := s.one(t, sess)
	bad, _ := core.Normalize(s.frame(sess, "1"))
	bad.TaskID = ""
	err := s.Store.Upsert(context.Background(), bad)
	WantError(t, "empty task_id", err, core.ErrInvalidRow)
	neg, _ := core.Normalize(s.frame(sess, "1"))
	neg.TotalTokens = i64(-1)
	WantError(t, "negative total_tokens", s.Store.Upsert(context.Background(), neg), core.ErrInvalidRow)
	assertRow(t, before, s.one(t, sess))
}

// testModelCheck applies random frame sequences over a few keys to the store
// and folds them through storekit.Merge; both must agree on every column but id
// and updated_at.
func testModelCheck(t *testing.T, s *suite) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	sess := s.session(t, "model")
	model := map[core.RowKey]core.Subagent{}
	pick := func(opts ...string) string { return opts[rng.IntN(len(opts))] }
	metric := func() int64 { return []int64{0, 0, -3, 1, 250, 275717}[rng.IntN(6)] }
	for i := range 300 {
		f := core.Frame{
			TaskSessionID:    sess,
			TaskID:           pick(s.id("task", "1"), s.id("task", "2")),
			TurnID:           pick("", s.id("turn", "1"), s.id("turn", "2")),
			ExecutionID:      pick("", s.id("exec", "1"), s.id("exec", "2")),
			ToolCallID:       pick(s.id("tool", "1"), s.id("tool", "2"), s.id("tool", "3")),
			ParentToolCallID: pick("", "", "p"),
			ToolStatus:       pick("", "pending", "in_progress", "completed", "error", "cancelled", "weird"),
			ObservedAt:       at(rng.IntN(1000)).Add(time.Duration(rng.IntN(1e6)) * time.Microsecond),
		}
		if rng.IntN(6) > 0 {
			var uses *int64
			if rng.IntN(2) == 0 {
				u := metric()
				uses = &u
			}
			f.Payload = &core.Payload{SubagentType: pick("", "explorer", "reviewer"), Description: pick("", "d1", "d2"),
				Status: pick("", "running", "async_launched", "completed", "??"), AgentID: pick("", "a1", "a2"),
				Model: pick("", "m1", "m2"), ChildSessionID: pick("", "c1"), IsAsync: rng.IntN(4) == 0,
				TotalTokens: metric(), DurationMs: metric(), ToolUseCount: uses}
		}
		if rng.IntN(10) == 0 { // a row the backfill wrote: a later frame of its pair absorbs it (docs/CONTRACT.md §8.5)
			f.ExecutionID, f.Settled = "", rng.IntN(2) == 0
		}
		row, v := core.Normalize(f)
		if v.UnknownExecution && rng.IntN(2) == 0 {
			row.Source = core.SourceBackfill
		}
		if err := s.Store.Upsert(context.Background(), row); err != nil {
			t.Fatalf("upsert %+v: %v", row.Key(), err)
		}
		storekit.Write(model, row)
		if i%50 == 49 || i == 299 {
			compareModel(t, s, sess, model)
		}
	}
}

func compareModel(t *testing.T, s *suite, sess string, model map[core.RowKey]core.Subagent) {
	t.Helper()
	rows := s.rows(t, sess)
	if len(rows) != len(model) {
		t.Fatalf("store has %d rows, model %d", len(rows), len(model))
	}
	for _, r := range rows {
		want, ok := model[r.Key()]
		if !ok {
			t.Fatalf("store has a row the model lacks: %+v", r.Key())
		}
		if d := Diff(want, r); len(d) > 0 {
			t.Fatalf("store and storekit.Merge disagree on %+v: %v", r.Key(), d)
		}
	}
}
