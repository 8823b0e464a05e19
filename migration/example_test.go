package migration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/migration"
)

// The migration pass at a host's boot, on its SQLite database: the table
// created, the execution key written, the history — none, here — recovered
// with the activation keys. A second pass finds its work done.
func ExampleMigrator_Run() {
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	db, _ := sqlite.OpenDB(filepath.Join(dir, "host.db"))
	for _, q := range []string{ // the host's tables, which it has already
		`CREATE TABLE task_sessions (id TEXT PRIMARY KEY, task_id TEXT NOT NULL)`,
		`CREATE TABLE task_session_messages (id TEXT PRIMARY KEY, task_session_id TEXT NOT NULL
			REFERENCES task_sessions(id), task_id TEXT, turn_id TEXT NOT NULL, metadata TEXT,
			created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL)`,
	} {
		db.Exec(q)
	}
	store, _ := sqlite.New(db)
	m := migration.New(store)
	for range 2 {
		r := m.Run(context.Background())
		for _, s := range r.Steps {
			fmt.Print(s.Step, " ", s.Status, "; ")
		}
		fmt.Println(r.Err())
	}
	// Output:
	// table ran; shape skipped; execution_key ran; backfill ran; <nil>
	// table ran; shape skipped; execution_key skipped; backfill skipped; <nil>
}
