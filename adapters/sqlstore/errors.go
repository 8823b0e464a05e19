package sqlstore

import (
	"errors"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
)

// The errors a Store's operations wrap, for errors.Is; each says what
// was refused, and how to fix it.
var (
	// ErrHandleSettings is returned (wrapped, with the setting and how to set
	// it) when a handle the host supplied lacks a setting the store depends on.
	ErrHandleSettings = errors.New("the database handle lacks a setting subagentctx depends on")

	// ErrInvalidTableName is wrapped by Tables.Validate's errors.
	ErrInvalidTableName = sqldialect.ErrInvalidTableName

	// ErrLeftToOwner is wrapped, with ErrPrivilege, by EnsureSchema's error
	// when the role may not run DDL the schema is due but this build's
	// writes do not need (sqldialect.SchemaObject.Cleanup) — such as
	// dropping a trigger an earlier release re-created during a rolling
	// deploy — and by the shape step's seam check (Evolution.Left) when it
	// may not merge the pairs an earlier release's writer doubled:
	// everything else is in place, and this build's writes go on unharmed
	// until the table's owner runs the migration pass.
	ErrLeftToOwner = errors.New("what only the table's owner may do waits for the table's owner")

	// ErrNoSessionsTable is returned (wrapped) when the host's sessions table,
	// which task_session_subagents references, does not exist: the library
	// never creates it.
	ErrNoSessionsTable = errors.New("the host's sessions table does not exist")

	// ErrPrivilege is wrapped by CheckPrivileges' error: the role lacks a
	// privilege its part needs.
	ErrPrivilege = errors.New("the database role lacks a privilege")

	// ErrShape is wrapped by the shape step's error when the table differs
	// from its declaration in a way no numbered step of this build changes.
	ErrShape = errors.New("task_session_subagents differs from its declaration")
)
