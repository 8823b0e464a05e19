// Command quickstart is the README's first program, whole: a host's
// SQLite database, the record's store on it, the migration pass, a
// subagent launched and completed, and the row it became.
//
//	go -C examples run ./quickstart
package main

// README: quickstart
import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
)

func main() {
	dir, err := os.MkdirTemp("", "quickstart-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := run(context.Background(), os.Stdout, filepath.Join(dir, "host.db")); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, path string) error {
	db, err := sqlite.OpenDB(path)
	if err != nil {
		return err
	}
	// The host's own tables, which a real host has already (the library
	// reads them, never creates them).
	for _, q := range []string{
		`CREATE TABLE task_sessions (id TEXT PRIMARY KEY, task_id TEXT NOT NULL)`,
		`CREATE TABLE task_session_messages (id TEXT PRIMARY KEY, task_session_id TEXT NOT NULL
			REFERENCES task_sessions(id) ON DELETE CASCADE, task_id TEXT, turn_id TEXT NOT NULL,
			metadata TEXT, created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL)`,
		`INSERT INTO task_sessions (id, task_id) VALUES ('sess-1', 'task-1')`,
	} {
		if err := db.Exec(q).Error; err != nil {
			return err
		}
	}

	store, err := sqlite.New(db) // on the host's handle: opens nothing of its own
	if err != nil {
		return err
	}
	// The migration pass, at every boot: the table, its shape, history.
	if report := backfill.New(store).Run(ctx); report.Failed() {
		return report.Err()
	}
	rec, err := core.NewRecorder(store)
	if err != nil {
		return err
	}
	at := time.Now()
	for _, f := range []core.Frame{
		{TaskSessionID: "sess-1", TaskID: "task-1", ExecutionID: "exec-1", ToolCallID: "toolu_1",
			ToolStatus: "in_progress", ObservedAt: at,
			Payload: &core.Payload{SubagentType: "explorer", Description: "Map the repo"}},
		{TaskSessionID: "sess-1", TaskID: "task-1", ExecutionID: "exec-1", ToolCallID: "toolu_1",
			ToolStatus: "completed", ObservedAt: at.Add(40 * time.Second),
			Payload: &core.Payload{Status: "completed", TotalTokens: 51234}},
	} {
		rec.Record(ctx, f) // queued: never waits on the database, never fails the caller
	}
	if err := rec.Close(ctx); err != nil { // at shutdown: writes what is queued
		return err
	}

	rows, err := store.ListBySession(ctx, "sess-1", core.Page{})
	if err != nil {
		return err
	}
	for _, r := range rows { // one row per subagent, merged from its frames
		fmt.Fprintln(w, r.ToolCallID, *r.SubagentType, *r.Description, *r.ToolStatus, *r.TotalTokens)
	}
	return nil
}

// README: end
