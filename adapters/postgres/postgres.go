// Package postgres keeps task_session_subagents in PostgreSQL through GORM
// and gorm.io/driver/postgres (pgx).
package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
)

// Store is a core.Store on PostgreSQL.
type Store struct {
	*sqlstore.Store
	close func() error
}

// OpenDB connects to PostgreSQL as a *gorm.DB (GORM's own logger silenced:
// failures surface as errors, not log lines).
func OpenDB(dsn string) (*gorm.DB, error) {
	if dsn == "" {
		return nil, errors.New("subagentctx: postgres: DSN is empty")
	}
	db, err := gorm.Open(gormpostgres.Open(dsn), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return nil, &core.OpError{Op: "connect to " + Redact(dsn), Kind: Dialect{}.Classify(err), Err: redactErr(err, dsn)}
	}
	return db, nil
}

// Open connects with dsn and opens the store. The host's sessions table
// must exist. Close releases the connections.
func Open(ctx context.Context, dsn string, tables core.HostTables) (*Store, error) {
	if err := tables.Validate(); err != nil { // before any connection
		return nil, fmt.Errorf("subagentctx: postgres: %w", err)
	}
	db, err := OpenDB(dsn)
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, db, tables)
	if err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	s.close = sqlDB.Close
	return s, nil
}

// New opens the store on a *gorm.DB the host already has; Close leaves that
// handle open.
func New(ctx context.Context, db *gorm.DB, tables core.HostTables) (*Store, error) {
	s, err := sqlstore.Open(ctx, db, Dialect{}, tables)
	if err != nil {
		return nil, err
	}
	return &Store{Store: s, close: func() error { return nil }}, nil
}

// Close closes the connections this package opened (none for New).
func (s *Store) Close() error { return s.close() }

// Dialect is PostgreSQL's sqlstore.Dialect.
type Dialect struct{}

// Name implements sqlstore.Dialect.
func (Dialect) Name() string { return "postgres" }

// createTable is SPEC §2's table. Metrics are BIGINT (the upstream 32-bit
// INTEGER was a defect). Timestamps are TIMESTAMPTZ: absolute instants, so
// neither writing nor comparing depends on the session's TimeZone.
const createTable = `CREATE TABLE IF NOT EXISTS task_session_subagents (
	id                  TEXT PRIMARY KEY,
	task_session_id     TEXT NOT NULL,
	task_id             TEXT NOT NULL,
	turn_id             TEXT,
	agent_execution_id  TEXT NOT NULL DEFAULT 'unknown',
	tool_call_id        TEXT NOT NULL,
	parent_tool_call_id TEXT,
	subagent_type       TEXT,
	description         TEXT,
	agent_id            TEXT,
	child_session_id    TEXT,
	model               TEXT,
	agent_status        TEXT,
	tool_status         TEXT,
	is_async            INTEGER NOT NULL DEFAULT 0,
	total_tokens        BIGINT,
	tool_use_count      BIGINT,
	duration_ms         BIGINT,
	source              TEXT NOT NULL DEFAULT 'live',
	observed_at         TIMESTAMPTZ NOT NULL,
	settled_at          TIMESTAMPTZ,
	updated_at          TIMESTAMPTZ NOT NULL,
	CONSTRAINT task_session_subagents_key UNIQUE (task_session_id, agent_execution_id, tool_call_id),
	CONSTRAINT task_session_subagents_session_fk FOREIGN KEY (task_session_id) REFERENCES %s(id) ON DELETE CASCADE
)`

const (
	createIndexSession = `CREATE INDEX IF NOT EXISTS idx_subagents_session_id ON task_session_subagents(task_session_id)`
	createIndexTask    = `CREATE INDEX IF NOT EXISTS idx_subagents_task_id ON task_session_subagents(task_id)`
	createIndexTurn    = `CREATE INDEX IF NOT EXISTS idx_subagents_turn_id ON task_session_subagents(turn_id)`
	createMeta         = `CREATE TABLE IF NOT EXISTS %s (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '')`
	tableExists        = `SELECT to_regclass(?) IS NOT NULL`
)

// CreateStatements implements sqlstore.Dialect.
func (Dialect) CreateStatements(t core.HostTables) []string {
	return []string{
		fmt.Sprintf(createTable, core.QuoteIdentifier(t.Sessions)),
		createIndexSession, createIndexTask, createIndexTurn,
		fmt.Sprintf(createMeta, core.QuoteIdentifier(t.Meta)),
	}
}

// TableExists implements sqlstore.Dialect.
func (Dialect) TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error) {
	var ok bool
	err := db.WithContext(ctx).Raw(tableExists, core.QuoteIdentifier(name)).Scan(&ok).Error
	return ok, err
}

// Instant implements sqlstore.Dialect. TIMESTAMPTZ compares as an instant
// already; a host column of type TIMESTAMP (without time zone) is converted
// by the backfill and health queries with AT TIME ZONE 'UTC' before it gets
// here.
func (Dialect) Instant(x string) string { return x }

// InstantArg implements sqlstore.Dialect: a UTC time.Time, sent as a
// timestamptz.
func (Dialect) InstantArg(t time.Time) any { return t.UTC() }

// Classify implements sqlstore.Dialect: SQLSTATE class 23 is a constraint
// violation; class 08, admin shutdown (57P01-57P03), and connection-level
// failures are unavailability.
func (Dialect) Classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "23"):
			return core.ErrConstraint
		case strings.HasPrefix(pgErr.Code, "08"), pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03":
			return core.ErrUnavailable
		}
		return nil
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) {
		return core.ErrUnavailable
	}
	return nil
}

// redactErr removes the DSN's password from an error's message, keeping the
// error itself reachable for errors.Is/As.
func redactErr(err error, dsn string) error {
	msg := err.Error()
	if red := Redact(dsn); red != dsn && strings.Contains(msg, dsn) {
		msg = strings.ReplaceAll(msg, dsn, red)
	}
	if pw := password(dsn); pw != "" && strings.Contains(msg, pw) {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
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
