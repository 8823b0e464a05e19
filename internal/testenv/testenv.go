// Package testenv holds the sqltest drivers of the SQL dialects, so that
// the adapters' suites, the command line's tests and the fx module's tests
// run the same body on every dialect: SQLite, PostgreSQL in a non-UTC
// session time zone, and PostgreSQL on a database with an ICU collation.
package testenv

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
)

// Drivers are every SQL dialect's driver, with a Citus cluster's when one
// is provided (pgtest.CitusAvailable).
func Drivers() []*sqltest.Driver {
	d := []*sqltest.Driver{SQLite(), Postgres(), PostgresICU()}
	if pgtest.CitusAvailable() {
		d = append(d, Citus())
	}
	return d
}

// Each runs fn once per dialect, as subtests, in parallel, each on a fresh
// environment.
func Each(t *testing.T, fn func(t *testing.T, e *sqltest.Env)) {
	for _, d := range Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, d.Env(t))
		})
	}
}

// SQLite is the SQLite driver: a file in the test's temporary directory.
func SQLite() *sqltest.Driver {
	return &sqltest.Driver{
		Name:    "sqlite",
		Dialect: sqlite.Dialect{},
		Open: func(t testing.TB) (*gorm.DB, string) {
			t.Helper()
			path := filepath.Join(t.TempDir(), "host.db")
			db, err := sqlite.OpenDB(path)
			if err != nil {
				t.Fatal(err)
			}
			closeAtCleanup(t, db)
			return db, "sqlite:" + path
		},
		New:             sqlite.New,
		Unavailable:     sqliteLocked,
		LegacyTable:     legacyTable,
		EarlierTable:    sqliteEarlierTable,
		PreviousRelease: func(t testing.TB, db *gorm.DB) { previousRelease(t, db, release7580611SQLite, "") },
		FailInserts: func(t testing.TB, db *gorm.DB, toolCallID string) func() {
			t.Helper()
			exec(t, db, `CREATE TRIGGER fail_insert BEFORE INSERT ON task_session_subagents
				WHEN NEW.tool_call_id = '`+toolCallID+`' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`)
			return func() { exec(t, db, `DROP TRIGGER fail_insert`) }
		},
	}
}

// Postgres is the PostgreSQL driver: a fresh database on the server
// scripts/test starts, every connection in a non-UTC session time zone.
func Postgres() *sqltest.Driver { return postgresDriver("postgres") }

// PostgresICU is Postgres on a database whose collation is ICU's
// linguistic one.
func PostgresICU() *sqltest.Driver { return postgresDriver("postgres-icu", pgtest.ICULocale) }

func postgresDriver(name string, with ...string) *sqltest.Driver {
	return &sqltest.Driver{
		Name:    name,
		Dialect: postgres.Dialect{},
		Open: func(t testing.TB) (*gorm.DB, string) {
			t.Helper()
			dsn := pgtest.NewDatabase(t, with...)
			return pgtest.Open(t, dsn), dsn
		},
		New:         postgres.New,
		Unavailable: postgresUnreachable,
		LegacyTable: legacyTable,
		EarlierTable: func(t testing.TB, db *gorm.DB) {
			exec(t, db, `ALTER TABLE task_session_subagents DROP CONSTRAINT task_session_subagents_pkey, ADD PRIMARY KEY (id)`)
			unversioned(t, db)
		},
		PreviousRelease: func(t testing.TB, db *gorm.DB) { previousRelease(t, db, release7580611Postgres, "") },
		FailInserts: func(t testing.TB, db *gorm.DB, toolCallID string) func() {
			t.Helper()
			exec(t, db, `CREATE FUNCTION fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN IF NEW.tool_call_id = '`+toolCallID+`' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`)
			exec(t, db, `CREATE TRIGGER fail_insert BEFORE INSERT ON task_session_subagents FOR EACH ROW EXECUTE FUNCTION
					fail_insert()`)
			return func() { exec(t, db, `DROP TRIGGER fail_insert ON task_session_subagents`) }
		},
	}
}

// PostgresPartitioned is Postgres with task_session_subagents created
// beforehand by an operator as a table hash-partitioned by task_session_id
// (four partitions), which the store must use unchanged.
func PostgresPartitioned() *sqltest.Driver {
	d := postgresDriver("postgres-partitioned")
	d.Host = func(t testing.TB, db *gorm.DB) {
		t.Helper()
		ddl := sqlstore.TableDDL(postgres.Dialect{}, sqlstore.Table, sqlstore.Tables{}.WithDefaults())
		exec(t, db, ddl+` PARTITION BY HASH (task_session_id)`)
		hashPartitions(t, db)
	}
	d.EarlierTable = earlierTableRecreated
	d.PreviousRelease = func(t testing.TB, db *gorm.DB) {
		previousRelease(t, db, release7580611Postgres, " PARTITION BY HASH (task_session_id)")
		hashPartitions(t, db)
	}
	return d
}

// hashPartitions creates the four partitions of a table partitioned by
// hash of task_session_id.
func hashPartitions(t testing.TB, db *gorm.DB) {
	t.Helper()
	for i := range 4 {
		exec(t, db, fmt.Sprintf(`CREATE TABLE task_session_subagents_p%d PARTITION OF task_session_subagents
			FOR VALUES WITH (MODULUS 4, REMAINDER %d)`, i, i))
	}
}

// The previous release's DDL (7580611), as it created the table.
var (
	//go:embed testdata/7580611/sqlite.sql
	release7580611SQLite string
	//go:embed testdata/7580611/postgres.sql
	release7580611Postgres string
)

// previousRelease replaces the table with ddl's, suffix appended to its
// CREATE TABLE, and no recorded version.
func previousRelease(t testing.TB, db *gorm.DB, ddl, suffix string) {
	t.Helper()
	exec(t, db, `DROP TABLE task_session_subagents`)
	for i, q := range strings.Split(strings.TrimSpace(ddl), ";\n") {
		q = strings.TrimSuffix(q, ";")
		if i == 0 {
			q += suffix
		}
		exec(t, db, q)
	}
	unversioned(t, db)
}

// earlierTableRecreated replaces the table with an earlier build's, as
// that build created it: one plain table, its primary key on id, every row
// kept. (A partitioned or distributed table cannot have its key altered
// so; a host upgrading from that build has the plain table.)
func earlierTableRecreated(t testing.TB, db *gorm.DB) {
	t.Helper()
	unversioned(t, db)
	exec(t, db, `CREATE TABLE earlier (LIKE task_session_subagents INCLUDING DEFAULTS)`)
	exec(t, db, `INSERT INTO earlier SELECT * FROM task_session_subagents`)
	exec(t, db, `DROP TABLE task_session_subagents`)
	exec(t, db, `ALTER TABLE earlier RENAME TO task_session_subagents`)
	exec(t, db, `ALTER TABLE task_session_subagents ADD PRIMARY KEY (id),
		ADD CONSTRAINT task_session_subagents_key UNIQUE (task_session_id, agent_execution_id, tool_call_id),
		ADD CONSTRAINT task_session_subagents_session_fk FOREIGN KEY (task_session_id)
			REFERENCES task_sessions(id) ON DELETE CASCADE`)
	for _, q := range sqlstore.IndexDDL(postgres.Dialect{}) {
		exec(t, db, q)
	}
}

// Citus is PostgreSQL on a Citus cluster (a coordinator and two workers):
// a schema of its own per test, the host's sessions, turns and messages
// distributed by session id and colocated, its meta table a reference
// table, as docs/CONTRACT.md §8.10 asks of a host.
func Citus() *sqltest.Driver {
	d := postgresDriver("citus")
	d.Open = func(t testing.TB) (*gorm.DB, string) {
		t.Helper()
		dsn := pgtest.NewCitusSchema(t)
		return pgtest.Open(t, dsn), dsn
	}
	d.Host = citusHost
	d.EarlierTable = earlierTableRecreated
	d.PreviousRelease = func(t testing.TB, db *gorm.DB) {
		previousRelease(t, db, release7580611Postgres, "")
		exec(t, db, `SELECT create_distributed_table('task_session_subagents', 'task_session_id', colocate_with =>
				'task_sessions')`)
	}
	// Citus runs triggers on distributed tables only when allowed; the
	// setting is per session, so it is set in the transaction that
	// creates or drops the trigger.
	failInserts := d.FailInserts
	d.FailInserts = func(t testing.TB, db *gorm.DB, toolCallID string) func() {
		t.Helper()
		unsafe := func(fn func(tx *gorm.DB)) {
			if err := db.Transaction(func(tx *gorm.DB) error {
				exec(t, tx, `SET LOCAL citus.enable_unsafe_triggers = on`)
				fn(tx)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		unsafe(func(tx *gorm.DB) { failInserts(t, tx, toolCallID) })
		return func() {
			unsafe(func(tx *gorm.DB) { exec(t, tx, `DROP TRIGGER fail_insert ON task_session_subagents`) })
		}
	}
	return d
}

// citusHost distributes the host's tables as a host on Citus has them,
// in four shards each, which keeps the many test schemas quick to create.
func citusHost(t testing.TB, db *gorm.DB) {
	t.Helper()
	if err := kandevtest.Distribute(context.Background(), db, sqlstore.Tables{}, 4); err != nil {
		t.Fatal(err)
	}
}

// unversioned removes the recorded schema versions, as an earlier build,
// which recorded none, left the meta table.
func unversioned(t testing.TB, db *gorm.DB) {
	t.Helper()
	exec(t, db, `DELETE FROM kandev_meta WHERE "key" LIKE 'subagent_context_schema_v%'`)
}

func exec(t testing.TB, db *gorm.DB, q string, args ...any) {
	t.Helper()
	if err := db.Exec(q, args...).Error; err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func closeAtCleanup(t testing.TB, db *gorm.DB) {
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
}

// legacyTable replaces task_session_subagents with the first draft's
// table: UNIQUE (task_session_id, tool_call_id), no agent_execution_id,
// primary key id, and (read as PostgreSQL reads them) 32-bit metrics and
// TIMESTAMP columns.
func legacyTable(t testing.TB, db *gorm.DB) {
	t.Helper()
	unversioned(t, db)
	exec(t, db, `DROP TABLE task_session_subagents`)
	exec(t, db, `CREATE TABLE task_session_subagents (
		id TEXT PRIMARY KEY, task_session_id TEXT NOT NULL, task_id TEXT NOT NULL, turn_id TEXT,
		tool_call_id TEXT NOT NULL, parent_tool_call_id TEXT, subagent_type TEXT, description TEXT,
		agent_id TEXT, child_session_id TEXT, model TEXT, agent_status TEXT, tool_status TEXT,
		is_async INTEGER NOT NULL DEFAULT 0, total_tokens INTEGER, tool_use_count INTEGER, duration_ms INTEGER,
		source TEXT NOT NULL DEFAULT 'live',
		observed_at TIMESTAMP NOT NULL, settled_at TIMESTAMP, updated_at TIMESTAMP NOT NULL,
		UNIQUE (task_session_id, tool_call_id),
		FOREIGN KEY (task_session_id) REFERENCES task_sessions(id) ON DELETE CASCADE)`)
	for _, c := range []string{"session_id", "task_id", "turn_id"} { // the first draft's indexes
		column := strings.Replace(c, "session_id", "task_session_id", 1)
		exec(t, db, `CREATE INDEX idx_subagents_`+c+` ON task_session_subagents(`+column+`)`)
	}
}

// sqliteEarlierTable rebuilds the table with its primary key on id alone
// (SQLite cannot alter a primary key).
func sqliteEarlierTable(t testing.TB, db *gorm.DB) {
	t.Helper()
	unversioned(t, db)
	create := strings.Replace(sqlstore.TableDDL(sqlite.Dialect{}, "earlier", sqlstore.Tables{}.WithDefaults()),
		"PRIMARY KEY (task_session_id, id)", "PRIMARY KEY (id)", 1)
	steps := []string{
		create,
		`INSERT INTO earlier SELECT * FROM task_session_subagents`,
		`DROP TABLE task_session_subagents`,
		`ALTER TABLE earlier RENAME TO task_session_subagents`,
	}
	for _, q := range append(steps, sqlstore.IndexDDL(sqlite.Dialect{})...) {
		exec(t, db, q)
	}
}

// sqliteLocked is a store on a database file another connection holds an
// exclusive lock on, with a busy timeout of 50 ms: every access is
// SQLITE_BUSY, the transient unavailability SQLite has.
func sqliteLocked(t testing.TB) (*sqlstore.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "locked.db")
	db, err := sql.Open(sqlite.DriverName, "file:"+path+"?"+strings.Join([]string{
		sqlite.PragmaParam("busy_timeout", "50"), sqlite.PragmaParam("foreign_keys", "1"),
		sqlite.PragmaParam("journal_mode", "DELETE"), "_time_format=sqlite"}, "&"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := sqlite.NewSQL(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := kandevtest.CreateTables(context.Background(), s.DB(), s.Tables()); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	holder, err := sql.Open(sqlite.DriverName, "file:"+path+"?"+sqlite.PragmaParam("locking_mode", "EXCLUSIVE"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	holder.SetMaxOpenConns(1)
	if _, err := holder.Exec(`CREATE TABLE x (a); INSERT INTO x VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	return s, ""
}

// postgresUnreachable is a store whose DSN points at a loopback port
// nothing listens on, with a password to check it never leaks.
func postgresUnreachable(t testing.TB) (*sqlstore.Store, string) {
	t.Helper()
	pgtest.AdminDSN(t) // skip or fail exactly like the other PostgreSQL tests
	const password = "s3cret-Unreachable"
	return PostgresStore(t, "postgres://u:"+password+"@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"), password
}

// Record writes frames through a Recorder on s and drains it, failing the
// test on error.
func Record(t testing.TB, s core.Store, frames []core.Frame) {
	t.Helper()
	rec, err := core.NewRecorder(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		rec.Record(context.Background(), f)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// PostgresStore is a store on a handle of its own to dsn (another role's,
// or through a fault proxy), closed at the test's cleanup.
func PostgresStore(t testing.TB, dsn string) *sqlstore.Store {
	t.Helper()
	db, err := postgres.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	closeAtCleanup(t, db)
	s, err := postgres.New(db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Reopen is a second handle of its own to e's database (a pool apart from
// e.DB's, as another process would have), closed at the test's cleanup.
func Reopen(t testing.TB, e *sqltest.Env) *gorm.DB {
	t.Helper()
	var db *gorm.DB
	var err error
	if path, ok := strings.CutPrefix(e.DSN, "sqlite:"); ok {
		db, err = sqlite.OpenDB(path)
	} else {
		db, err = postgres.OpenDB(e.DSN)
	}
	if err != nil {
		t.Fatal(err)
	}
	closeAtCleanup(t, db)
	return db
}
