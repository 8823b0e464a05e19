package sqlstore

import (
	"fmt"
	"strings"

	"github.com/subagentctx/subagentctx/core"
)

// The table's constraints and indexes, by name, on every dialect.
const (
	KeyConstraint     = Table + "_key"
	SessionForeignKey = Table + "_session_fk"
)

// PrimaryKeyColumns is the primary key: the session first, so that the key
// contains the column a distributed database shards by (docs/CONTRACT.md
// §2, §8.9).
var PrimaryKeyColumns = []string{"task_session_id", "id"}

// Indexes are the three secondary indexes, by name and column.
var Indexes = []struct{ Name, Column string }{
	{"idx_subagents_session_id", "task_session_id"},
	{"idx_subagents_task_id", "task_id"},
	{"idx_subagents_turn_id", "turn_id"},
}

// CreateTable is the table's DDL, rendered from core.Columns: every column
// with its dialect type, NOT NULL and default, the primary key, the
// three-column key and the cascading foreign key to the host's sessions.
// name is the table to create (Table, or a temporary name for a rebuild).
func CreateTable(d Dialect, name string, t Tables) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", name)
	for _, c := range core.Columns {
		fmt.Fprintf(&b, "\t%-20s %s", c.Name, d.ColumnType(c.Type))
		if !c.Nullable {
			b.WriteString(" NOT NULL")
		}
		if lit := DefaultLiteral(c); lit != "" {
			b.WriteString(" DEFAULT " + lit)
		}
		b.WriteString(",\n")
	}
	fmt.Fprintf(&b, "\tPRIMARY KEY (%s),\n", strings.Join(PrimaryKeyColumns, ", "))
	fmt.Fprintf(&b, "\tCONSTRAINT %s UNIQUE (%s),\n", KeyConstraint, strings.Join(core.KeyColumns, ", "))
	fmt.Fprintf(&b, "\tCONSTRAINT %s FOREIGN KEY (task_session_id) REFERENCES %s(id) ON DELETE CASCADE\n)", SessionForeignKey, quote(t.Sessions))
	return b.String()
}

// CreateIndexes creates the secondary indexes if absent.
func CreateIndexes() []string {
	out := make([]string, len(Indexes))
	for i, x := range Indexes {
		out[i] = fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s(%s)", x.Name, Table, x.Column)
	}
	return out
}

// CreateMeta creates the meta table if absent (docs/CONTRACT.md §2).
func CreateMeta(t Tables) string {
	return `CREATE TABLE IF NOT EXISTS ` + quote(t.Meta) + ` (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '')`
}

// SchemaStatements is the whole DDL of the store, every statement
// idempotent: the table, its indexes, the meta table and the dialect's
// extras.
func SchemaStatements(d Dialect, t Tables) []string {
	out := append([]string{CreateTable(d, Table, t)}, CreateIndexes()...)
	return append(append(out, CreateMeta(t)), d.SchemaExtras()...)
}

// DefaultLiteral renders a column's declared default as an SQL literal,
// "" when it has none.
func DefaultLiteral(c core.Column) string {
	switch x := c.Default.(type) {
	case nil:
		return ""
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	panic(fmt.Sprintf("sqlstore: no SQL literal for the default %#v of %s", c.Default, c.Name))
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
	// tool_call_id), the first draft's key, still exists.
	LegacyKey bool
	// PrimaryKey holds the primary key's columns, comma-separated.
	PrimaryKey string
	// Indexes: the three secondary indexes exist.
	Indexes bool
	// Wide: metrics are 64-bit and timestamps are this dialect's type.
	Wide bool
	// Distributed: sharded by task_session_id (Citus). Not part of the end
	// shape; it chooses how the backfill runs.
	Distributed bool
}

// EndState reports whether the table has the end shape (docs/CONTRACT.md
// §4 step 2): the execution column, the three-column key and no other, the
// primary key (task_session_id, id), the indexes, 64-bit metrics.
func (s Shape) EndState() bool {
	return s.Exists && s.HasExecutionColumn && s.ThreeColumnKey && !s.LegacyKey && s.Indexes && s.Wide &&
		s.PrimaryKey == strings.Join(PrimaryKeyColumns, ",")
}

// CatalogIndex is one index (or unique constraint) as read from a catalog.
type CatalogIndex struct {
	Name    string
	Unique  bool
	Primary bool
	Columns string // comma-separated, in key order
}

// ShapeFrom derives the key and index parts of a Shape from a catalog's
// indexes.
func ShapeFrom(s Shape, idx []CatalogIndex) Shape {
	key, legacy := strings.Join(core.KeyColumns, ","), "task_session_id,tool_call_id"
	plain := map[string]bool{}
	for _, i := range idx {
		switch {
		case i.Primary:
			s.PrimaryKey = i.Columns
		case i.Unique && i.Columns == key:
			s.ThreeColumnKey = true
		case i.Unique && i.Columns == legacy:
			s.LegacyKey = true
		case !i.Unique:
			plain[i.Columns] = true
		}
	}
	s.Indexes = true
	for _, x := range Indexes {
		s.Indexes = s.Indexes && plain[x.Column]
	}
	return s
}

// IsLegacyKey reports whether an index's columns are the first draft's key.
func IsLegacyKey(columns string) bool { return columns == "task_session_id,tool_call_id" }
