// Package postgres keeps task_session_subagents in PostgreSQL through GORM
// and gorm.io/driver/postgres (pgx, pure Go: no cgo). Its constructors
// return the shared *sqlstore.Store with PostgreSQL's Dialect.
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package postgres

import (
	"context"
	"database/sql"
	"net/url"

	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// OpenDB returns a *gorm.DB for dsn without connecting yet (the first query
// connects; a server that is down is an error of that query, not of
// OpenDB). GORM's own logger is silenced: failures surface as errors.
func OpenDB(dsn string) (*gorm.DB, error) {
	if dsn == "" {
		return nil, liberr.Errorf("postgres: DSN is empty")
	}
	db, err := gorm.Open(
		gormpostgres.Open(dsn),
		&gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, DisableAutomaticPing: true},
	)
	if err != nil {
		return nil, &core.OpError{
			Op:   "connect to " + Redact(dsn),
			Kind: Dialect{}.Classify(err),
			Err:  redactErr(err, dsn),
		}
	}
	if pool, err := db.DB(); err == nil {
		// database/sql keeps 2 idle connections by default: with a
		// recorder's writers (Dialect.Writers) and a reader beside them,
		// each batch would open a connection anew.
		pool.SetMaxIdleConns(2 * Dialect{}.Writers())
	}
	return db, nil
}

// Open connects with dsn and opens the store, creating
// task_session_subagents if absent (sqlstore.Open: the options may ask for
// a read-only store or no schema). The host's sessions table must exist
// (sqlstore.ErrNoSessionsTable). Close releases the connections.
func Open(ctx context.Context, dsn string, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	s, err := sqlstore.Open(ctx, Dialect{}, func(readOnly bool) (*gorm.DB, error) {
		if readOnly {
			return OpenDB(readOnlyDSN(dsn))
		}
		return OpenDB(dsn)
	}, opts...)
	if err != nil {
		return nil, redactErr(err, dsn)
	}
	return s, nil
}

// readOnlyDSN asks PostgreSQL for read-only transactions on every
// connection: a read-only store can never change the database.
func readOnlyDSN(d string) string {
	if u, err := url.Parse(d); err == nil && u.Scheme != "" {
		// Appended as text: re-encoding the query would escape other
		// parameters' values (a time zone's "/"), which pgx passes on as is.
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += "default_transaction_read_only=on"
		return u.String()
	}
	return d + " default_transaction_read_only=on"
}

// New returns the store on a *gorm.DB the host already has, without
// touching the database; Close leaves the handle open. Create the table
// with EnsureSchema or the migration pass (package migration).
func New(db *gorm.DB, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	return sqlstore.New(db, Dialect{}, opts...)
}

// NewSQL is New for a host that holds a *sql.DB (sqlx, database/sql with
// pgx's stdlib driver): the store uses the host's pool and opens no
// connection of its own.
func NewSQL(db *sql.DB, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	if db == nil {
		return nil, liberr.Errorf("postgres.NewSQL: *sql.DB is nil")
	}
	g, err := gorm.Open(
		gormpostgres.New(gormpostgres.Config{Conn: db}),
		&gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, DisableAutomaticPing: true},
	)
	if err != nil {
		return nil, liberr.Errorf("postgres: wrap the host's *sql.DB: %w", err)
	}
	return New(g, opts...)
}

// redactErr removes the DSN's password from an error's message, keeping the
// error itself reachable for errors.Is/As.
func redactErr(err error, dsn string) error {
	msg := RedactText(err.Error(), dsn)
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
