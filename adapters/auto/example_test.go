package auto_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/subagentctx/subagentctx/adapters/auto"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
)

// A host that runs on SQLite or PostgreSQL hands over the *sql.DB it has;
// its driver picks the adapter.
func ExampleNewSQL() {
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	db, err := sql.Open(sqlite.DriverName, sqlite.DSN(filepath.Join(dir, "host.db"))) // or pgx's "pgx"
	if err != nil {
		panic(err)
	}
	defer db.Close()
	store, err := auto.NewSQL(db)
	fmt.Println(store != nil, err)
	// Output: true <nil>
}
