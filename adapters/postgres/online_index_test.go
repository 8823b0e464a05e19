package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// TestIndexBuiltWithoutBlockingWrites (docs/CONTRACT.md §4 step 1): a
// populated table that lacks an index — an earlier release's lacks
// idx_subagents_session_order — gets it CONCURRENTLY: while the build
// waits for a writer's open transaction, another writer's frame is
// written at once (a plain CREATE INDEX queues every later writer behind
// it), and the pass's report names the DDL it ran. An index an
// interrupted build left invalid is built again.
func TestIndexBuiltWithoutBlockingWrites(t *testing.T) {
	e := testenv.Postgres().Env(t)
	ctx := context.Background()
	if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, "s", "t"); err != nil {
		t.Fatal(err)
	}
	frame := func(tool string) core.Subagent {
		row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e1", ToolCallID: tool,
			ToolStatus: "in_progress", ObservedAt: time.Now()})
		return row
	}
	if err := e.Store.Upsert(ctx, frame("before")); err != nil {
		t.Fatal(err)
	}
	const index = "idx_subagents_session_order"
	e.Exec(t, `DROP INDEX `+index)
	open := e.DB.Begin()
	if err := open.Exec(`UPDATE task_session_subagents SET updated_at = now() WHERE tool_call_id = 'before'`).
		Error; err != nil {
		t.Fatal(err)
	}
	passed := make(chan backfill.Report, 1)
	go func() { passed <- backfill.New(e.Store, backfill.WithLogger(testlog.Discard)).Prepare(ctx) }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var waiting int64
		e.DB.Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND query LIKE 'CREATE INDEX%' AND wait_event_type = 'Lock'`).Scan(&waiting)
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the index build never waited for the open transaction")
		}
		time.Sleep(20 * time.Millisecond)
	}
	written := make(chan error, 1)
	go func() { written <- e.Store.Upsert(ctx, frame("during")) }()
	err, late := await.Within(written, 5*time.Second)
	open.Commit()
	if late != nil || err != nil {
		t.Fatalf("a frame written while the index builds: %v, %v; want it written at once", err, late)
	}
	r := await.Recv(t, passed, "the pass")
	if step := r.Step(backfill.StepTable); r.Failed() ||
		!strings.Contains(step.Detail, "ran DROP INDEX CONCURRENTLY IF EXISTS "+index+"; CREATE INDEX CONCURRENTLY "+index) {
		t.Fatalf("the pass: %s; want the concurrent build named", r)
	}
	valid := func() bool {
		var ok []bool
		e.DB.Raw(`SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(?)`, index).Scan(&ok)
		return len(ok) == 1 && ok[0]
	}
	if !valid() {
		t.Fatal("the index built is not valid")
	}
	// What an interrupted concurrent build leaves: the index, invalid.
	e.Exec(t, `UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(?)`, index)
	if r := backfill.New(e.Store, backfill.WithLogger(testlog.Discard)).Prepare(ctx); r.Failed() || !valid() {
		t.Fatalf("the pass over an invalid index: %s; valid afterwards: %t", r, valid())
	}
}
