// Command quickstart is the README's first program, whole: a host's
// SQLite database, the record's store on it, a subagent launched and
// completed, and the row it became.
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
	"github.com/subagentctx/subagentctx/core"
)

func main() {
	path := filepath.Join(os.TempDir(), "quickstart.db")
	if err := run(context.Background(), os.Stdout, path); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, path string) error {
	db, err := sqlite.OpenDB(path)
	if err != nil {
		return err
	}
	// The host's sessions table, which a real host already has.
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS task_sessions (id TEXT PRIMARY KEY);
		INSERT OR IGNORE INTO task_sessions VALUES ('sess-1')`).Error; err != nil {
		return err
	}
	store, err := sqlite.New(db) // on the host's handle: opens nothing of its own
	if err != nil {
		return err
	}
	if err := store.EnsureSchema(ctx); err != nil { // a host runs the migration pass here (below)
		return err
	}
	rec, err := core.NewRecorder(store)
	if err != nil {
		return err
	}
	launched := core.Frame{TaskSessionID: "sess-1", TaskID: "task-1", ExecutionID: "exec-1", ToolCallID: "toolu_1",
		ToolStatus: "in_progress", ObservedAt: time.Now(),
		Payload: &core.Payload{SubagentType: "explorer", Description: "Map the repo"}}
	completed := launched
	completed.ToolStatus, completed.ObservedAt = "completed", launched.ObservedAt.Add(40*time.Second)
	completed.Payload = &core.Payload{Status: "completed", TotalTokens: 51234}
	rec.Record(ctx, launched) // queued: never waits on the database, never fails the caller
	rec.Record(ctx, completed)
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
