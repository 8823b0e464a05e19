// Package testenv opens the same Kandev-shaped host database on each SQL
// dialect, so a test body runs unchanged on SQLite and PostgreSQL.
package testenv

import (
	"context"
	"path/filepath"
	"testing"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/internal/pgtest"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// Env is one dialect's host database with the store opened in it.
type Env struct {
	Dialect string // "sqlite" or "postgres"
	DB      *gorm.DB
	DSN     string // the file path (sqlite) or DSN (postgres)
	Store   Store
	Tables  core.HostTables
}

// Store is what both SQL adapters' stores are.
type Store interface {
	core.Store
	DB() *gorm.DB
	Dialect() sqlstore.Dialect
	Tables() core.HostTables
}

// Each runs fn once per dialect, as subtests "sqlite" and "postgres", each
// on a fresh database with Kandev-shaped host tables.
func Each(t *testing.T, fn func(t *testing.T, e *Env)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}

// SQLite returns a fresh SQLite environment.
func SQLite(t testing.TB) *Env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "host.db")
	db, err := sqlite.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return finish(t, &Env{Dialect: "sqlite", DB: db, DSN: path}, func(db *gorm.DB) (Store, error) {
		return sqlite.New(context.Background(), db, core.HostTables{})
	})
}

// Postgres returns a fresh PostgreSQL environment (skipping, or failing
// under CI=true, without a server).
func Postgres(t testing.TB) *Env {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	db := pgtest.Open(t, dsn)
	return finish(t, &Env{Dialect: "postgres", DB: db, DSN: dsn}, func(db *gorm.DB) (Store, error) {
		return postgres.New(context.Background(), db, core.HostTables{})
	})
}

func finish(t testing.TB, e *Env, open func(*gorm.DB) (Store, error)) *Env {
	t.Helper()
	e.Tables = core.HostTables{}.WithDefaults()
	if err := kandevtest.CreateTables(context.Background(), e.DB, e.Tables); err != nil {
		t.Fatal(err)
	}
	s, err := open(e.DB)
	if err != nil {
		t.Fatal(err)
	}
	e.Store = s
	return e
}

// Harness is the conformance suite's view of this environment: its store,
// and host sessions created and deleted in its database.
func (e *Env) Harness() storetest.Harness {
	return storetest.Harness{
		Store: e.Store,
		CreateSession: func(ctx context.Context, id, task string) error {
			return kandevtest.InsertSession(ctx, e.DB, e.Tables, id, task)
		},
		DeleteSession: func(ctx context.Context, id string) error { return kandevtest.DeleteSession(ctx, e.DB, e.Tables, id) },
	}
}

// Exec runs SQL, failing the test on error.
func (e *Env) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if err := e.DB.Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// FailInsertsOf installs a trigger that makes any insert into
// task_session_subagents of the given tool_call_id fail: an injected fault
// in the middle of a statement.
func (e *Env) FailInsertsOf(t testing.TB, toolCallID string) {
	t.Helper()
	if e.Dialect == "sqlite" {
		e.Exec(t, `CREATE TRIGGER fail_insert BEFORE INSERT ON task_session_subagents
			WHEN NEW.tool_call_id = '`+toolCallID+`' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`)
		return
	}
	e.Exec(t, `CREATE FUNCTION fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.tool_call_id = '`+toolCallID+`' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`)
	e.Exec(t, `CREATE TRIGGER fail_insert BEFORE INSERT ON task_session_subagents FOR EACH ROW EXECUTE FUNCTION fail_insert()`)
}

// StopFailing removes FailInsertsOf's trigger.
func (e *Env) StopFailing(t testing.TB) {
	t.Helper()
	if e.Dialect == "sqlite" {
		e.Exec(t, `DROP TRIGGER fail_insert`)
		return
	}
	e.Exec(t, `DROP TRIGGER fail_insert ON task_session_subagents`)
}

// CreateLegacyTable replaces task_session_subagents with the plan's first
// draft: UNIQUE (task_session_id, tool_call_id), no agent_execution_id (and,
// on PostgreSQL, upstream's 32-bit metrics and TIMESTAMP columns).
func (e *Env) CreateLegacyTable(t testing.TB) {
	t.Helper()
	intType, tsType := "INTEGER", "TIMESTAMP"
	e.Exec(t, `DROP TABLE task_session_subagents`)
	e.Exec(t, `CREATE TABLE task_session_subagents (
		id TEXT PRIMARY KEY, task_session_id TEXT NOT NULL, task_id TEXT NOT NULL, turn_id TEXT,
		tool_call_id TEXT NOT NULL, parent_tool_call_id TEXT, subagent_type TEXT, description TEXT,
		agent_id TEXT, child_session_id TEXT, model TEXT, agent_status TEXT, tool_status TEXT,
		is_async INTEGER NOT NULL DEFAULT 0, total_tokens `+intType+`, tool_use_count `+intType+`, duration_ms `+intType+`,
		source TEXT NOT NULL DEFAULT 'live', observed_at `+tsType+` NOT NULL, settled_at `+tsType+`, updated_at `+tsType+` NOT NULL,
		UNIQUE (task_session_id, tool_call_id),
		FOREIGN KEY (task_session_id) REFERENCES task_sessions(id) ON DELETE CASCADE)`)
	e.Exec(t, `CREATE INDEX IF NOT EXISTS idx_subagents_session_id ON task_session_subagents(task_session_id)`)
	e.Exec(t, `CREATE INDEX IF NOT EXISTS idx_subagents_task_id ON task_session_subagents(task_id)`)
	e.Exec(t, `CREATE INDEX IF NOT EXISTS idx_subagents_turn_id ON task_session_subagents(turn_id)`)
}
