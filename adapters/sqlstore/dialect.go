package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
)

// Dialect is what differs between the SQL databases: types, timestamp
// arithmetic, how the host's messages are read, the catalog, error
// classification. adapters/sqlite and adapters/postgres implement it; it is
// exported so that they can, and is not a stable interface for others (it
// changes whenever a statement needs something new from a dialect).
//
// Every statement is rendered by this package from the dialect's fragments;
// testdata/*.sql holds each statement whole, per dialect, for review.
type Dialect interface {
	// Name is "sqlite" or "postgres".
	Name() string
	// ColumnType is the SQL type of a declared column type.
	ColumnType(core.Type) string
	// SchemaExtras are statements, each idempotent, that create what the
	// dialect's fragments call (PostgreSQL's metadata function).
	SchemaExtras() []string
	// TableExists reports whether a table of that (validated, unqualified)
	// name is visible.
	TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error)

	// Instant is an SQL expression over one of this table's timestamp
	// columns: its Unix time in microseconds, a 64-bit integer. Every
	// comparison and ordering of those columns goes through it, so each is
	// exact and independent of the session time zone (AC-24e).
	Instant(expr string) string
	// HostInstant is an SQL expression over a host timestamp column
	// (messages' created_at, updated_at): a value that orders and compares
	// as the instant at the host's full precision, NULL when the value is
	// not an instant in years 1-9999 (docs/CONTRACT.md §4.2).
	HostInstant(expr string) string
	// HostInstantArg is t as a bound value comparable with HostInstant:
	// HostInstant(x) >= HostInstantArg(t) exactly when x is at or after t.
	HostInstantArg(t time.Time) any
	// ParseHostInstant reads a scanned HostInstant value (nil for NULL).
	ParseHostInstant(v any) (*time.Time, error)
	// Bytewise makes a text expression compare byte by byte, whatever the
	// database's collation (docs/CONTRACT.md §8.4).
	Bytewise(expr string) string

	// SubagentMessages is a SELECT over the host's messages yielding one
	// row per subagent message (docs/CONTRACT.md §4.2) with the columns
	// MessageColumns names, exactly as backfill.Recover reads it.
	SubagentMessages(t Tables) string
	// WithConn runs fn on one connection of db prepared for this dialect's
	// fragments (SQLite registers its functions there).
	WithConn(ctx context.Context, db *gorm.DB, fn func(*gorm.DB) error) error
	// BackfillForm is how the backfill runs on this dialect; distributed
	// tells whether the table is sharded (Shape.Distributed).
	BackfillForm(distributed bool) BackfillForm
	// Distribute places task_session_subagents beside the host's sessions
	// when the database shards them (Citus: distributed by task_session_id,
	// colocated with the sessions table; the meta table, when createdMeta,
	// a reference table). It is a no-op where the database does not shard,
	// or while the table is absent or not yet in its end shape (EnsureSchema
	// calls it before creating the table, to check that the sessions can be
	// followed, and after; the shape step after upgrading), and fails,
	// saying why, when the sessions are sharded and the table cannot follow
	// them.
	Distribute(ctx context.Context, db *gorm.DB, t Tables, createdMeta bool) error

	// CheckHandle reports, with ErrHandleSettings, a setting of the
	// handle's connections the store depends on and cannot safely set
	// itself (SQLite's foreign keys and busy timeout; PostgreSQL's UTF-8
	// encoding), naming the setting and how to set it.
	CheckHandle(ctx context.Context, db *gorm.DB) error
	// Writers is how many concurrent writers suit the database: a
	// recorder's default (core.WriterHint).
	Writers() int
	// Classify maps a driver error to core.ErrConstraint,
	// core.ErrUnavailable or nil (unknown).
	Classify(err error) error
	// Shape reads the current shape of task_session_subagents from the
	// catalog.
	Shape(ctx context.Context, db *gorm.DB) (Shape, error)
	// Upgrade brings a table that exists but is not in its end shape to the
	// end shape, every row kept. It runs inside the caller's transaction, so
	// a failure leaves the old shape. hook is called after each statement
	// with the stage's name (fault injection in tests; never nil).
	Upgrade(ctx context.Context, tx *gorm.DB, t Tables, hook func(stage string) error) error
	// UpgradeStages are the stage names Upgrade reports, in order, when it
	// upgrades the first draft's table (the fault-injection tests walk them).
	UpgradeStages() []string
}

// BackfillForm is how a dialect runs the backfill (docs/CONTRACT.md §4.1).
type BackfillForm struct {
	// Staged: the ranked messages are staged in a temporary table by one
	// scan, which backfill_through and the insert then read (SQLite, which
	// has no writable CTE). Otherwise the backfill is one statement, or, on
	// a sharded table, two that each run on every shard (Store.Backfill).
	Staged bool
	// Plan: statements run first in the backfill's transaction (planner
	// settings).
	Plan []string
}

// Pipeliner is implemented by a dialect whose driver can send many
// statements in one round trip (PostgreSQL's pipeline through pgx).
// Pipeline runs query once per argument list, in order, in one
// transaction, each its own statement; on a failed statement it rolls back
// and returns its index (at), or -1 when beginning or committing failed.
// ok is false when the pool's driver cannot pipeline (the store then sends
// the statements one at a time).
type Pipeliner interface {
	Pipeline(ctx context.Context, pool *sql.DB, query string, args [][]any) (at int, ok bool, err error)
}

// MessageColumns are the columns of Dialect.SubagentMessages, in order:
// the message's identity, whether it is recoverable (0/1), its created_at
// as a HostInstant, and the row it would insert (docs/CONTRACT.md §4.1).
var MessageColumns = []string{
	"message_id", "task_session_id", "task_id", "tool_call_id", "recoverable", "created",
	"turn_id", "parent_tool_call_id", "subagent_type", "description", "agent_id", "child_session_id", "model",
	"agent_status", "tool_status", "is_async", "total_tokens", "tool_use_count", "duration_ms", "observed_at", "settled_at",
}
