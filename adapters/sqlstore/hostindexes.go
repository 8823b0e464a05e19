package sqlstore

import (
	"context"
	"fmt"
)

// HostIndex is an index on the host's tables that the library's reads
// need and the library never creates (docs/CONTRACT.md §2): the host
// owns its tables.
type HostIndex struct {
	Table, Column string
	// Why says which reads go through it.
	Why string
}

// Statement is the CREATE INDEX that gives the host the index.
func (x HostIndex) Statement() string {
	return fmt.Sprintf("CREATE INDEX %s_%s_idx ON %s (%s)", x.Table, x.Column, quote(x.Table), x.Column)
}

// HostIndexes are the indexes the library's reads need on the host's
// tables t (defaults filled in).
func HostIndexes(t Tables) []HostIndex {
	t = t.WithDefaults()
	return []HostIndex{
		{t.Messages, "task_session_id", "health, coverage, the overview and the session page (a session's messages)"},
		{t.Messages, "created_at", "health and coverage over a window (a window's messages)"},
	}
}

// MissingHostIndexes are the HostIndexes with no index whose first column
// is theirs.
func (s *Store) MissingHostIndexes(ctx context.Context) ([]HostIndex, error) {
	info, err := s.d.Describe(ctx, s.db.WithContext(ctx), s.tables.Messages)
	if err != nil {
		return nil, s.opError("read the host's indexes", err)
	}
	var out []HostIndex
	for _, x := range HostIndexes(s.tables) {
		found := false
		for _, i := range info.Indexes {
			found = found || (len(i.Columns) > 0 && i.Columns[0] == x.Column)
		}
		if !found && info.Exists {
			out = append(out, x)
		}
	}
	return out, nil
}
