package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// TestIndexBuiltWithoutBlockingWrites (docs/CONTRACT.md §4 steps 1 and
// 2): a populated table that lacks an index gets it CONCURRENTLY — one
// the table step builds (an earlier release's table lacks
// idx_subagents_session_order), and one the shape step's new column
// needs (idx_subagents_unchecked, built after its transaction): while
// the build waits for a writer's open transaction, another writer's frame
// is written at once (a plain CREATE INDEX queues every later writer
// behind it), and the pass's report names the index. An index an
// interrupted build left invalid is built again.
func TestIndexBuiltWithoutBlockingWrites(t *testing.T) {
	for _, c := range []struct {
		index, step, named string
		drop               string
	}{
		{"idx_subagents_session_order", migration.StepTable,
			"ran DROP INDEX CONCURRENTLY IF EXISTS idx_subagents_session_order; CREATE INDEX CONCURRENTLY " +
				"idx_subagents_session_order", `DROP INDEX idx_subagents_session_order`},
		// The table as the build before step 5 left it.
		{"idx_subagents_unchecked", migration.StepShape, "built idx_subagents_unchecked after the transaction",
			`ALTER TABLE task_session_subagents DROP COLUMN seam_checked;
			DELETE FROM kandev_meta WHERE key = 'subagent_context_schema_v5'`},
	} {
		t.Run(c.index, func(t *testing.T) { testIndexBuiltWithoutBlockingWrites(t, c.index, c.step, c.named, c.drop) })
	}
}

func testIndexBuiltWithoutBlockingWrites(t *testing.T, index, step, named, drop string) {
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
	e.Exec(t, drop)
	// A writer's transaction, open while the index builds: begun before
	// the pass — or, where the pass alters the table first, queued behind
	// that change before its commit — and still open after.
	open := e.DB.Begin()
	begin := func() error {
		return open.Exec(`UPDATE task_session_subagents SET updated_at = now() WHERE tool_call_id = 'before'`).Error
	}
	hook := func(string) error { return nil }
	if step == migration.StepTable {
		if err := begin(); err != nil {
			t.Fatal(err)
		}
	} else {
		began := make(chan error, 1)
		hook = func(stage string) error {
			if stage == "before commit" {
				go func() { began <- begin() }()
				if err := await.Poll(30*time.Second, func() bool { return waiting(e, "UPDATE%") > 0 }); err != nil {
					return fmt.Errorf("the writer queued behind the step's lock: %w", err)
				}
			}
			return nil
		}
		defer func() {
			if err := await.Recv(t, began, "the open transaction's write"); err != nil {
				t.Error(err)
			}
		}()
	}
	passed := make(chan migration.Report, 1)
	go func() {
		passed <- migration.New(e.Store, migration.WithLogger(testlog.Discard), migration.WithHook(hook)).Prepare(ctx)
	}()
	if err := await.Poll(30*time.Second, func() bool { return waiting(e, "CREATE INDEX%") > 0 }); err != nil {
		t.Fatalf("the index build waiting for the open transaction: %v", err)
	}
	written := make(chan error, 1)
	go func() { written <- e.Store.Upsert(ctx, frame("during")) }()
	err, late := await.Within(written, 5*time.Second)
	open.Commit()
	if late != nil || err != nil {
		t.Fatalf("a frame written while the index builds: %v, %v; want it written at once", err, late)
	}
	r := await.Recv(t, passed, "the pass")
	if r.Failed() || !strings.Contains(r.Step(step).Detail, named) {
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
	if r := migration.New(e.Store, migration.WithLogger(testlog.Discard)).Prepare(ctx); r.Failed() || !valid() {
		t.Fatalf("the pass over an invalid index: %s; valid afterwards: %t", r, valid())
	}
}

// waiting counts the statements of the test's database, like like, that
// wait for a lock.
func waiting(e *sqltest.Env, like string) (n int64) {
	e.DB.Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
		AND query LIKE ? AND wait_event_type = 'Lock'`, like).Scan(&n)
	return n
}
