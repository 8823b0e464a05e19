// Package sqlstore is the one GORM implementation of core.Store shared by the
// SQLite and PostgreSQL adapters. Each adapter supplies a Dialect: its DDL,
// its timestamp handling and its error classification (Temporal's
// one-converter-per-plugin shape); everything else is written once here.
package sqlstore

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
)

// Dialect is what differs between the SQL databases.
type Dialect interface {
	// Name is "sqlite" or "postgres".
	Name() string
	// CreateStatements returns the DDL that creates, if absent,
	// task_session_subagents, its indexes and the meta table.
	CreateStatements(t core.HostTables) []string
	// TableExists reports whether a (validated) table name exists.
	TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error)
	// Instant returns an SQL expression over a timestamp column (or any
	// timestamp-valued expression) whose comparisons and ordering are
	// timestamp comparisons at microsecond resolution, independent of the
	// session time zone and TZ (AC-24e).
	Instant(expr string) string
	// InstantArg is the bound value that compares with Instant(…).
	InstantArg(t time.Time) any
	// Classify maps a driver error to core.ErrConstraint, core.ErrUnavailable
	// or nil (unknown).
	Classify(err error) error
}
