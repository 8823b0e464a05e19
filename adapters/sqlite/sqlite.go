// Package sqlite is the embedded default: task_session_subagents in a SQLite
// database through GORM and gorm.io/driver/sqlite, on mattn/go-sqlite3 in
// a build with cgo and on modernc.org/sqlite (pure Go) without it: one
// answer on both, and one file format. Its constructors return the shared
// *sqlstore.Store with SQLite's Dialect.
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package sqlite

import (
	"context"
	"database/sql"
	"net/url"
	"strings"

	gormsqlite "gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// DSN returns the DSN for a database file with Pragmas, for DriverName.
func DSN(path string) string {
	if strings.HasPrefix(path, "file:") {
		if strings.Contains(path, "?") {
			return path + "&" + Pragmas
		}
		return path + "?" + Pragmas
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + Pragmas
}

// OpenDB opens a SQLite file with Pragmas as a *gorm.DB (GORM's own logger
// silenced: failures surface as errors, not log lines).
func OpenDB(path string) (*gorm.DB, error) { return openDB(path, false) }

// openDB opens the file, read-only when asked: the connection then refuses
// every write (mode=ro, query_only), for an operator's read commands and
// the web view.
func openDB(path string, readOnly bool) (*gorm.DB, error) {
	if path == "" {
		return nil, liberr.Errorf("sqlite: database path is empty")
	}
	dsn, how := DSN(path), ""
	if readOnly {
		dsn, how = "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+readOnlyParams, " read-only"
	}
	db, err := gorm.Open(&gormsqlite.Dialector{DriverName: DriverName, DSN: dsn},
		&gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return nil, liberr.Errorf("sqlite: open %s%s: %w", path, how, err)
	}
	return db, nil
}

// Open opens (creating if needed) the SQLite file at path and the store in
// it, creating task_session_subagents if absent (sqlstore.Open: the
// options may ask for a read-only store or no schema). The host's sessions
// table must exist (sqlstore.ErrNoSessionsTable). Close releases the
// connections.
func Open(ctx context.Context, path string, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	return sqlstore.Open(
		ctx,
		Dialect{},
		func(readOnly bool) (*gorm.DB, error) { return openDB(path, readOnly) },
		opts...)
}

// New returns the store on a *gorm.DB the host already has, without
// touching the database; Close leaves the handle open. Create the table
// with EnsureSchema or the migration pass (package migration).
func New(db *gorm.DB, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	return sqlstore.New(db, Dialect{}, opts...)
}

// NewSQL is New for a host that holds a *sql.DB opened with DriverName
// (sqlx, database/sql): the store uses the host's pool and opens no
// connection of its own.
func NewSQL(db *sql.DB, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	if db == nil {
		return nil, liberr.Errorf("sqlite.NewSQL: *sql.DB is nil")
	}
	g, err := gorm.Open(
		&gormsqlite.Dialector{Conn: db},
		&gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, DisableAutomaticPing: true},
	)
	if err != nil {
		return nil, liberr.Errorf("sqlite: wrap the host's *sql.DB: %w", err)
	}
	return New(g, opts...)
}
