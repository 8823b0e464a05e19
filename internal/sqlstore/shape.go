package sqlstore

import (
	"strings"

	"github.com/subagentctx/subagentctx/core"
)

// Column lists that identify the keys and indexes in a catalog.
const (
	KeyColumns       = "task_session_id,agent_execution_id,tool_call_id"
	LegacyKeyColumns = "task_session_id,tool_call_id"
)

// IndexStatements create the three required indexes, on both dialects.
var IndexStatements = []string{
	`CREATE INDEX IF NOT EXISTS idx_subagents_session_id ON task_session_subagents(task_session_id)`,
	`CREATE INDEX IF NOT EXISTS idx_subagents_task_id ON task_session_subagents(task_id)`,
	`CREATE INDEX IF NOT EXISTS idx_subagents_turn_id ON task_session_subagents(turn_id)`,
}

// MetaStatement creates the meta table if absent (SPEC §2), on both
// dialects; meta is a validated name.
func MetaStatement(meta string) string {
	return `CREATE TABLE IF NOT EXISTS ` + core.QuoteIdentifier(meta) + ` (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '')`
}

// SchemaStatements is the whole DDL of the store, every statement
// idempotent: the dialect's table, the three indexes, the meta table.
func SchemaStatements(d Dialect, t core.HostTables) []string {
	return append(append(d.CreateStatements(t), IndexStatements...), MetaStatement(t.Meta))
}

// IndexColumns are the columns of the three required indexes.
var IndexColumns = []string{"task_session_id", "task_id", "turn_id"}

// CatalogIndex is one index (or unique constraint) as read from a catalog.
type CatalogIndex struct {
	Name    string
	Unique  bool
	Columns string // comma-separated, in key order
}

// ShapeFrom derives the uniqueness and index parts of a Shape from a
// catalog's indexes.
func ShapeFrom(s Shape, idx []CatalogIndex) Shape {
	plain := map[string]bool{}
	for _, i := range idx {
		switch {
		case i.Unique && i.Columns == KeyColumns:
			s.ThreeColumnKey = true
		case i.Unique && i.Columns == LegacyKeyColumns:
			s.LegacyKey = true
		case !i.Unique:
			plain[i.Columns] = true
		}
	}
	s.Indexes = true
	for _, c := range IndexColumns {
		s.Indexes = s.Indexes && plain[c]
	}
	return s
}

// JSONPath joins path elements for error messages and SQLite paths.
func JSONPath(path ...string) string { return strings.Join(path, ".") }
