package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/migration"
)

// The health check after the pass: every subagent message since the
// record's activation has its row (no shortfall), which is what
// subagentctl health exits 0 for.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "host.db")
	db, _ := sqlite.OpenDB(path) // the host's own tables, which it has already
	db.Exec(`CREATE TABLE task_sessions (id TEXT PRIMARY KEY, task_id TEXT NOT NULL)`)
	db.Exec(`CREATE TABLE task_session_messages (id TEXT PRIMARY KEY, task_session_id TEXT NOT NULL,
		task_id TEXT, turn_id TEXT NOT NULL, metadata TEXT, created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL)`)

	ctx := context.Background()
	store, err := sqlite.Open(ctx, path) // connections of its own; creates the table
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if err := migration.New(store).Run(ctx).Err(); err != nil {
		panic(err)
	}
	h, err := store.Health(ctx, report.HealthQuery{})
	fmt.Println(h.Ran, h.State, h.Shortfall, err)
	// Output: true activated 0 <nil>
}
