package fxmodule_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/fx"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/fxmodule"
	"github.com/subagentctx/subagentctx/migration"
)

// The host provides its store; the module runs the migration pass in the
// background and gives the host a Recorder. Start returns at once; Stop
// drains what was recorded.
func Example() {
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	db, _ := sqlite.OpenDB(filepath.Join(dir, "host.db"))
	db.Exec(`CREATE TABLE task_sessions (id TEXT PRIMARY KEY, task_id TEXT NOT NULL)`) // the host's own
	db.Exec(`INSERT INTO task_sessions VALUES ('sess-1', 'task-1')`)
	db.Exec(`CREATE TABLE task_session_messages (id TEXT PRIMARY KEY, task_session_id TEXT NOT NULL,
		task_id TEXT, turn_id TEXT NOT NULL, metadata TEXT, created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL)`)

	var rec *core.Recorder
	var reader report.Reader
	var runner *migration.Runner
	app := fx.New(fx.NopLogger,
		fx.Provide(func() (*sqlstore.Store, error) { return sqlite.New(db) }),
		fxmodule.SQL,
		fx.Populate(&rec, &reader, &runner),
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		panic(err)
	}
	rec.Record(ctx, core.Frame{TaskSessionID: "sess-1", TaskID: "task-1", ExecutionID: "exec-1",
		ToolCallID: "toolu_1", ToolStatus: "completed", Payload: &core.Payload{SubagentType: "explorer"}})
	if _, err := runner.Wait(ctx); err != nil { // the pass, history included, has completed
		panic(err)
	}
	if err := rec.Flush(ctx); err != nil { // what was recorded is written
		panic(err)
	}
	st, err := reader.Stats(ctx, report.StatsQuery{TaskSessionID: "sess-1"})
	fmt.Println(st.Subagents, st.Activation.State, err)
	if err := app.Stop(ctx); err != nil { // drains the recorder, stops the pass, closes the store
		panic(err)
	}
	// Output: 1 activated <nil>
}
