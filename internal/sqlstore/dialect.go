// Package sqlstore is the one GORM implementation of core.Store shared by the
// SQLite and PostgreSQL adapters. Each adapter supplies a Dialect: its DDL,
// its timestamp handling and its error classification (Temporal's
// one-converter-per-plugin shape); everything else is written once here.
package sqlstore

import (
	"context"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
)

// Dialect is what differs between the SQL databases.
type Dialect interface {
	// Name is "sqlite" or "postgres".
	Name() string
	// CreateStatements returns the dialect's DDL that creates, if absent,
	// task_session_subagents (and any helper the dialect needs);
	// SchemaStatements adds what both dialects share.
	CreateStatements(t core.HostTables) []string
	// TableExists reports whether a (validated) table name exists.
	TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error)
	// Instant returns an SQL expression over a timestamp column: its Unix
	// time in microseconds, a 64-bit integer. Every comparison and ordering
	// of timestamps goes through it, so each is a timestamp comparison at
	// microsecond resolution, independent of the session time zone and TZ
	// (AC-24e); a bound instant is time.Time.UnixMicro().
	Instant(expr string) string
	// HostTime returns a function that turns a column of a host table (the
	// messages' created_at and updated_at) into a value for one of this
	// project's timestamp columns, exactly and independent of the session
	// time zone.
	HostTime(ctx context.Context, db *gorm.DB, table, column string) (func(expr string) string, error)
	// Classify maps a driver error to core.ErrConstraint, core.ErrUnavailable
	// or nil (unknown).
	Classify(err error) error

	// MessageDocument is an expression yielding the message metadata column
	// as a JSON object, or as {} when it is NULL, '', 'null', not JSON, not
	// an object, or cannot possibly be a subagent message (it does not
	// contain the text subagent_task). It never raises (AC-23b).
	MessageDocument(column string) string
	// JSONText reads a string at path from a MessageDocument: NULL unless
	// it is a JSON string, and '' is NULL.
	JSONText(doc string, path ...string) string
	// JSONInt reads an integer at path: NULL unless it is a JSON number
	// whose value is an integer within 64 bits and at least min (1e3 and
	// 2.0 count). Strings, fractions, booleans and out-of-range numbers are
	// NULL (AC-23).
	JSONInt(doc string, min int64, path ...string) string
	// JSONBool is 1 when the value at path is true or a number equal to 1,
	// else 0.
	JSONBool(doc string, path ...string) string

	// WritableCTE reports whether an INSERT may run inside a WITH clause
	// (PostgreSQL), so that the backfill is one statement.
	WritableCTE() bool
	// Fence is a clause that keeps a subquery from being flattened into
	// its parent, so an expensive column (the parsed document) is computed
	// once per row however often the parent refers to it.
	Fence() string

	// Shape reads the current shape of task_session_subagents.
	Shape(ctx context.Context, db *gorm.DB) (Shape, error)
	// Upgrade brings a table that exists but is not in its end shape to the
	// end shape, every row kept (agent_execution_id = 'unknown'). It runs
	// inside the caller's transaction, so a failure leaves the old shape.
	// hook is called between statements (fault injection in tests; never
	// nil).
	Upgrade(ctx context.Context, tx *gorm.DB, t core.HostTables, hook func(stage string) error) error
}

// Shape is what the migration pass needs to know about the table.
type Shape struct {
	Exists bool
	// HasExecutionColumn: agent_execution_id exists.
	HasExecutionColumn bool
	// ThreeColumnKey: a unique constraint on exactly (task_session_id,
	// agent_execution_id, tool_call_id), in that order.
	ThreeColumnKey bool
	// LegacyKey: a unique constraint or index on (task_session_id,
	// tool_call_id), the plan's first draft, still exists.
	LegacyKey bool
	// Indexes: the three indexes exist.
	Indexes bool
	// Wide: metrics are 64-bit and timestamps are this dialect's type.
	Wide bool
}

// EndState reports whether the table is in the shape SPEC §4 step 2 calls
// the end state: the column, the three-column key (and no other), the
// indexes and 64-bit metrics.
func (s Shape) EndState() bool {
	return s.Exists && s.HasExecutionColumn && s.ThreeColumnKey && !s.LegacyKey && s.Indexes && s.Wide
}
