package sqlstore

import "strings"

// Column lists that identify the keys and indexes in a catalog.
const (
	KeyColumns       = "task_session_id,agent_execution_id,tool_call_id"
	LegacyKeyColumns = "task_session_id,tool_call_id"
)

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
