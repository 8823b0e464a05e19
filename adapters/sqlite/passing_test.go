package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gormsqlite "gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// storeOn opens the record's store on the file with these DSN parameters
// (and the time format modernc.org/sqlite needs, which go-sqlite3 ignores).
func storeOn(t *testing.T, path string, params ...string) *sqlstore.Store {
	t.Helper()
	dsn := "file:" + path + "?" + strings.Join(append(params, "_time_format=sqlite"), "&")
	db, err := gorm.Open(&gormsqlite.Dialector{DriverName: sqlite.DriverName, DSN: dsn},
		&gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB, _ := db.DB(); sqlDB.Close() })
	s, err := sqlite.New(db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPassingStates: SQLite's passing states answer as PostgreSQL's
// (docs/CONTRACT.md §6.1): another writer holding the file past the busy
// timeout is kept and retried, and every frame is written once it lets go.
func TestPassingStates(t *testing.T) {
	t.Run("Busy", func(t *testing.T) {
		e := testenv.SQLite().Env(t)
		path := strings.TrimPrefix(e.DSN, "sqlite:")
		holder, err := sql.Open(sqlite.DriverName, "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		conn, err := holder.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		store := storeOn(t, path, sqlite.PragmaParam("busy_timeout", "50"), sqlite.PragmaParam("foreign_keys", "1"),
			"_txlock=immediate", sqlite.PragmaParam("journal_mode", "WAL"))
		e.Kept(t, store, func() func() {
			if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
				t.Fatal(err)
			}
			return func() {
				if _, err := conn.ExecContext(context.Background(), `COMMIT`); err != nil {
					t.Fatal(err)
				}
			}
		})
	})
}

// TestReadOnlyFileKept: a file the store cannot write (a read-only mount)
// keeps the frames, none counted failed while it lasts; Close gives them
// up at its budget and says why.
func TestReadOnlyFileKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.db")
	rw, err := sqlite.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := kandevtest.CreateTables(context.Background(), rw, sqlstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	kandevtest.InsertSession(context.Background(), rw, sqlstore.Tables{}, "s", "t")
	s, err := sqlite.New(rw)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	store := storeOn(t, path, "mode=ro", sqlite.PragmaParam("busy_timeout", "50"),
		sqlite.PragmaParam("foreign_keys", "1"))
	var logs testlog.Buffer
	rec, _ := core.NewRecorder(store, core.WithRetry(10*time.Millisecond, 20*time.Millisecond),
		core.WithDrain(300*time.Millisecond), core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	for i := range 5 {
		rec.Record(context.Background(), core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: fmt.Sprint("c", i)})
	}
	time.Sleep(200 * time.Millisecond)
	if v := rec.Counters().Values(); v.Failed != 0 || v.Pending != 5 {
		t.Errorf("read-only: %+v; want all kept", v)
	}
	err = rec.Close(context.Background())
	if v := rec.Counters().Values(); err == nil || !strings.Contains(err.Error(), "readonly") ||
		v.Failed != 5 || v.Pending != 0 {
		t.Errorf("Close: %v, %+v; want 5 given up, the cause named", err, v)
	}
}
