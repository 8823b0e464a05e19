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
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/core"
)

func main() {
	ctx := context.Background()
	db, err := sqlite.OpenDB(filepath.Join(os.TempDir(), "quickstart.db"))
	check(err)
	check(db.Exec(`CREATE TABLE IF NOT EXISTS task_sessions (id TEXT PRIMARY KEY); -- the host's own table
		INSERT OR IGNORE INTO task_sessions VALUES ('sess-1')`).Error)
	store, err := sqlite.New(db) // on the host's handle: opens nothing of its own
	check(err)
	check(store.EnsureSchema(ctx)) // a host runs the migration pass here (below)
	rec, err := core.NewRecorder(store)
	check(err)

	launched := core.Frame{TaskSessionID: "sess-1", TaskID: "task-1", ExecutionID: "exec-1", ToolCallID: "toolu_1",
		ToolStatus: "in_progress", ObservedAt: time.Now(),
		Payload: &core.Payload{SubagentType: "explorer", Description: "Map the repo"}}
	completed := launched
	completed.ToolStatus, completed.ObservedAt = "completed", launched.ObservedAt.Add(40*time.Second)
	completed.Payload = &core.Payload{Status: "completed", TotalTokens: 51234}
	rec.Record(ctx, launched) // queued: never waits on the database, never fails the caller
	rec.Record(ctx, completed)
	check(rec.Close(ctx)) // at shutdown: writes what is queued
	rows, err := store.ListBySession(ctx, "sess-1", core.Page{})
	check(err)
	for _, r := range rows { // one row per subagent, merged from its frames
		fmt.Println(r.ToolCallID, *r.SubagentType, *r.Description, *r.ToolStatus, *r.TotalTokens)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// README: end
