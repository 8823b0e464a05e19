package sqlstore

import (
	"context"
	"iter"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Export implements report.Exporter: one statement, its rows read as they
// arrive, so an export of any size runs in constant memory here (the
// database sorts: byte order has no index under a linguistic collation).
// The library gives updated_at no index: one on a column every upsert
// rewrites would cost the hot path (docs/CONTRACT.md §8.15); the window
// is written so that one an operator adds serves it.
func (s *Store) Export(ctx context.Context, q report.ExportQuery) iter.Seq2[core.Subagent, error] {
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
		dest := make([]any, len(columns))
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

// WithWriteHorizon sets the write horizon (default DefaultWriteHorizon):
// the store rolls back every write of its own not committed within half
// of it, and an export's next window starts that far behind now
// (NextSince). Every process writing to one database should use the same.
func WithWriteHorizon(d time.Duration) Option { return func(s *Store) { s.horizon = d } }

// NextSince implements report.Exporter (docs/CONTRACT.md §8.16): q's Until,
// or now less the write horizon when that is earlier, taken after any
// migration pass in progress has ended (a pass's transaction may outlast
// the horizon; what it stamped is committed once its lock is free).
func (s *Store) NextSince(ctx context.Context, q report.ExportQuery) (time.Time, error) {
	if err := q.Validate(); err != nil {
		return time.Time{}, &core.OpError{Op: "export", Err: err}
	}
	if err := s.waitForPass(ctx); err != nil {
		return time.Time{}, err
	}
	h := storekit.CanonicalTime(s.now().Add(-s.horizon))
	if q.Until.IsZero() || h.Before(q.Until) {
		return h, nil
	}
	return q.Until, nil
}

// writeDeadline bounds one write of the store to half the write horizon
// (the caller's deadline, when sooner, stands).
func (s *Store) writeDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.horizon/2)
}

// exportStatement selects the rows of q in export order. The window is a
// plain range on updated_at, so that an index an operator adds on it
// serves it (docs/CONTRACT.md §8.15).
func (s *Store) exportStatement(q report.ExportQuery) (string, []any) {
	d := s.d
	sess, id := d.Bytewise("task_session_id"), d.Bytewise("id")
	within, args := d.Within("updated_at", q.Since, q.Until)
	if c, ok := d.(sqldialect.Ceiling); ok && !q.Since.IsZero() && q.Until.IsZero() {
		within += " AND " + c.Ceiling("updated_at")
	}
	stmt := "SELECT " + columnList("") + " FROM " + Table + " WHERE " + within
	if k := q.After; k != nil {
		stmt += " AND (" + sess + " > ? OR (" + sess + " = ? AND " + id + " > ?))"
		args = append(args, k.TaskSessionID, k.TaskSessionID, k.ID)
	}
	return stmt + " ORDER BY " + sess + ", " + id, args
}
