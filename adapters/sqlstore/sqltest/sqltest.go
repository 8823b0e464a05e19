// Package sqltest is the suite every SQL dialect runs unchanged, through one
// entry point (River's riverdrivertest.Exercise pattern): the store
// conformance suite (core/storetest), the catalog shape against the column
// declaration, error classification, the migration pass (its evolution
// path and the seam between history and live capture) and the read side.
// A dialect's test supplies a Driver; where dialects legitimately differ,
// the Dialect declares it (sqldialect.MessageView's HostTimeText, the
// optional interfaces) and the suite tests each declared difference,
// visibly.
//
// Stability: the conformance suite a third-party store runs is covered by
// the module's semver promise, as a host's package is (README, Stability).
package sqltest

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// Driver is what a dialect's test supplies.
type Driver struct {
	// Name is the driver's name ("sqlite", "postgres-icu", …).
	Name string
	// Dialect is the store's dialect.
	Dialect sqldialect.Dialect
	// Open returns a fresh, empty database, dropped at the test's cleanup,
	// as a handle and as the DSN the command line takes.
	Open func(t testing.TB) (db *gorm.DB, dsn string)
	// New wraps a handle (the adapter's New).
	New func(db *gorm.DB, opts ...sqlstore.Option) (*sqlstore.Store, error)
	// Unavailable returns a store whose database cannot be reached right
	// now (PostgreSQL: nothing listens; SQLite: the file is locked past the
	// busy timeout), and the password of its DSN (to check it never leaks).
	Unavailable func(t testing.TB) (s *sqlstore.Store, password string)
	// LegacyTable, EarlierTable and PreviousRelease are the earlier
	// shapes the dialect's databases may hold, for the upgrade tests. A
	// dialect that starts at this build's shape leaves them nil: the tests
	// of an upgrade from one then skip, saying the dialect starts after it.
	//
	// LegacyTable replaces task_session_subagents with the first draft's
	// shape, as the dialect's first draft declared it: UNIQUE
	// (task_session_id, tool_call_id), no agent_execution_id, primary key
	// id.
	LegacyTable func(t testing.TB, db *gorm.DB)
	// EarlierTable turns the table into an earlier build's: the declared
	// shape but for a primary key on id alone, every row kept.
	EarlierTable func(t testing.TB, db *gorm.DB)
	// PreviousRelease replaces the table with the one the previous release
	// of this module (7580611) created, from its own DDL, in this
	// deployment's placement (partitioned, distributed), empty, with no
	// recorded version and none of the schema objects this build adds.
	PreviousRelease func(t testing.TB, db *gorm.DB)
	// FailInserts makes every insert of that tool call id into the table
	// fail with "injected failure", until stop is called.
	FailInserts func(t testing.TB, db *gorm.DB, toolCallID string) (stop func())
	// Host, when set, finishes the host's tables after they are created,
	// as a host on this deployment has them (Citus: distributed by session,
	// the meta table a reference table).
	Host func(t testing.TB, db *gorm.DB)
}

// legacyTable, earlierTable and previousRelease turn the table into an
// earlier shape by the Driver's function, or skip the test where the
// dialect has none: it starts after that shape.
func (d *Driver) legacyTable(t testing.TB, db *gorm.DB) {
	d.earlier(t, db, d.LegacyTable, "the first draft's table")
}

func (d *Driver) earlierTable(t testing.TB, db *gorm.DB) {
	d.earlier(t, db, d.EarlierTable, "an earlier build's table (a primary key on id alone)")
}

func (d *Driver) previousRelease(t testing.TB, db *gorm.DB) {
	d.earlier(t, db, d.PreviousRelease, "the previous release's table")
}

func (d *Driver) earlier(t testing.TB, db *gorm.DB, shape func(testing.TB, *gorm.DB), what string) {
	t.Helper()
	if shape == nil {
		t.Skipf("%s starts after %s: no upgrade from it to test", d.Name, what)
	}
	shape(t, db)
}

// Env is one fresh database of a Driver's dialect with Kandev-shaped host
// tables and the store in it, its schema created.
type Env struct {
	*Driver
	DB     *gorm.DB
	DSN    string
	Store  *sqlstore.Store
	Tables sqlstore.Tables
}

// Env opens a fresh environment.
func (d *Driver) Env(t testing.TB) *Env {
	t.Helper()
	db, dsn := d.Open(t)
	e := &Env{Driver: d, DB: db, DSN: dsn, Tables: sqlstore.KandevTables()}
	if err := kandevtest.CreateTables(context.Background(), db, e.Tables); err != nil {
		t.Fatal(err)
	}
	if d.Host != nil {
		d.Host(t, db)
	}
	s, err := d.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.Store = s
	return e
}

// Harness is the conformance suite's view of this environment.
func (e *Env) Harness() storetest.Harness {
	return storetest.Harness{
		Store:    e.Store,
		Features: storetest.Features{SessionForeignKey: true, Activation: true},
		CreateSession: func(ctx context.Context, id, task string) error {
			return kandevtest.InsertSession(ctx, e.DB, e.Tables, id, task)
		},
		DeleteSession: func(ctx context.Context, id string) error {
			return kandevtest.DeleteSession(ctx, e.DB, e.Tables, id)
		},
	}
}

// Exec runs SQL, failing the test on error.
func (e *Env) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if err := e.DB.Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Exercise runs the whole suite on a dialect. Tests run in parallel, each
// on a database of its own.
func Exercise(t *testing.T, d *Driver) {
	t.Run("Store", func(t *testing.T) {
		t.Parallel()
		h := d.Env(t).Harness() // one database, shared: every test uses ids of its own
		storetest.Run(t, func(*testing.T) storetest.Harness { return h })
	})
	for _, group := range []struct {
		name  string
		tests []test
	}{{"Schema", schemaTests}, {"Errors", errorTests}, {"Migration", migrationTests}, {"Evolution", evolveTests},
		{"Read", readTests}, {"Retention", pruneTests}} {
		t.Run(group.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range group.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.fn(t, d)
				})
			}
		})
	}
}

// test is one test of the suite.
type test struct {
	name string
	fn   func(t *testing.T, d *Driver)
}
