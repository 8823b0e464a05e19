package sqlstore

import (
	"context"
	"iter"

	"github.com/subagentctx/subagentctx/core"
)

// Export implements core.Exporter: one statement, its rows read as they
// arrive, so an export of any size runs in constant memory here (the
// database sorts: byte order has no index under a linguistic collation).
// updated_at has no index: an export is a batch job that reads the table
// once, and an index on a column every upsert rewrites would cost the hot
// path (docs/CONTRACT.md §8.15).
func (s *Store) Export(ctx context.Context, q core.ExportQuery) iter.Seq2[core.Subagent, error] {
	return func(yield func(core.Subagent, error) bool) {
		if err := q.Validate(); err != nil {
			yield(core.Subagent{}, &core.OpError{Op: "export", Err: err})
			return
		}
		stmt, args := s.exportStatement(q)
		rows, err := s.db.WithContext(ctx).Raw(stmt, args...).Rows()
		if err != nil {
			yield(core.Subagent{}, s.opError("export", err))
			return
		}
		defer rows.Close()
		dest := make([]any, len(core.Columns))
		for rows.Next() {
			r, err := scanRow(rows, dest)
			if err != nil {
				yield(core.Subagent{}, s.opError("export", err))
				return
			}
			if !yield(r, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(core.Subagent{}, s.opError("export", err))
		}
	}
}

// exportStatement selects the rows of q in export order.
func (s *Store) exportStatement(q core.ExportQuery) (string, []any) {
	d := s.d
	sess, id := d.Bytewise("task_session_id"), d.Bytewise("id")
	updated := d.Instant("updated_at")
	stmt := "SELECT " + columnList("") + " FROM " + Table + " WHERE 1 = 1"
	var args []any
	if !q.Since.IsZero() {
		stmt += " AND " + updated + " >= ?"
		args = append(args, core.CeilMicro(q.Since).UnixMicro())
	}
	if !q.Until.IsZero() {
		stmt += " AND " + updated + " < ?"
		args = append(args, core.CeilMicro(q.Until).UnixMicro())
	}
	if k := q.After; k != nil {
		stmt += " AND (" + sess + " > ? OR (" + sess + " = ? AND " + id + " > ?))"
		args = append(args, k.TaskSessionID, k.TaskSessionID, k.ID)
	}
	return stmt + " ORDER BY " + sess + ", " + id, args
}
