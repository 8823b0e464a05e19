package sqlstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// SessionTurns implements report.TurnLister (docs/CONTRACT.md §5.7): the
// first rows of the page's turns, walked along the session's order index
// from the cursor, then the rows of those turns; a probe at each end says
// whether turns start beyond the page. Each statement reads what the page
// draws, whatever the session's size.
func (s *Store) SessionTurns(ctx context.Context, q report.TurnQuery) (report.TurnPage, error) {
	const op = "session turns"
	if err := q.Validate(); err != nil {
		return report.TurnPage{}, &core.OpError{Op: op, Err: err}
	}
	n := q.LimitOrDefault()
	page := report.TurnPage{Rows: []core.Subagent{}}
	var starts []turnStart
	var err error
	switch {
	case q.Before != nil:
		if starts, err = s.turnStarts(ctx, q.TaskSessionID, q.Before, true, n+1); err != nil {
			return report.TurnPage{}, s.opError(op, err)
		}
		page.Earlier = len(starts) > n
		starts = starts[:min(len(starts), n)]
		slices.Reverse(starts)
	default:
		if starts, err = s.turnStarts(ctx, q.TaskSessionID, q.After, false, n+1); err != nil {
			return report.TurnPage{}, s.opError(op, err)
		}
		page.Later = len(starts) > n
		starts = starts[:min(len(starts), n)]
	}
	if len(starts) == 0 {
		return page, nil
	}
	page.First, page.Last = starts[0].at, starts[len(starts)-1].at
	switch {
	case q.Before != nil:
		later, err := s.turnStarts(ctx, q.TaskSessionID, &page.Last, false, 1)
		if err != nil {
			return report.TurnPage{}, s.opError(op, err)
		}
		page.Later = len(later) > 0
	case q.After != nil:
		earlier, err := s.turnStarts(ctx, q.TaskSessionID, &page.First, true, 1)
		if err != nil {
			return report.TurnPage{}, s.opError(op, err)
		}
		page.Earlier = len(earlier) > 0
	}
	sql, args := s.turnRowsStatement(q.TaskSessionID, starts)
	if page.Rows, err = s.rows(ctx, op, sql, args); err != nil {
		return report.TurnPage{}, err
	}
	return page, nil
}

// turnStart is a turn's first row: the turn, and the row's place.
type turnStart struct {
	turn *string
	at   core.Cursor
}

// turnStarts returns the first rows of at most limit turns of the session
// that start after the cursor (before it, nearest first, when backwards;
// from the session's start when it is nil).
func (s *Store) turnStarts(ctx context.Context, session string, from *core.Cursor, backwards bool,
	limit int) ([]turnStart, error) {
	sql, args := s.turnStartsStatement(session, from, backwards, limit)
	rows, err := s.db.WithContext(ctx).Raw(sql, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []turnStart
	for rows.Next() {
		var t turnStart
		var at time.Time
		if err := rows.Scan(&t.turn, &at, &t.at.ToolCallID, &t.at.AgentExecutionID); err != nil {
			return nil, err
		}
		t.at.ObservedAt = storekit.CanonicalTime(at)
		out = append(out, t)
	}
	return out, rows.Err()
}

// turnStartsStatement selects the turns' first rows: a row of the session
// no row of its own turn precedes, in AC-13 order along the session's
// order index, after (or before) the cursor.
func (s *Store) turnStartsStatement(session string, from *core.Cursor, backwards bool, limit int) (string, []any) {
	d := s.d
	place := func(t string) [3]string {
		return [3]string{d.Ordered(t + ".observed_at"), d.Bytewise(t + ".tool_call_id"),
			d.Bytewise(t + ".agent_execution_id")}
	}
	r, o := place("r"), place("o")
	before := func(a, b [3]string) string { // a precedes b in AC-13 order
		return "(" + a[0] + " < " + b[0] + " OR (" + a[0] + " = " + b[0] + " AND (" + a[1] + " < " + b[1] +
			" OR (" + a[1] + " = " + b[1] + " AND " + a[2] + " < " + b[2] + "))))"
	}
	sql := `SELECT r.turn_id, r.observed_at, r.tool_call_id, r.agent_execution_id
FROM ` + d.ThroughIndex(Table+" r", sessionOrderIndex) + `
WHERE r.task_session_id = ?`
	args := []any{session}
	if from != nil {
		c := from.Canonical()
		at := [3]string{"?", "?", "?"}
		bound, eq := r[0]+" >= ?", before(at, r)
		if backwards {
			bound, eq = r[0]+" <= ?", before(r, at)
		}
		// The bound alone is what an index range can serve; the whole
		// comparison follows it.
		sql += "\n\tAND " + bound + " AND " + eq
		v := d.OrderedArg(c.ObservedAt)
		args = append(args, v, v, v, c.ToolCallID, c.ToolCallID, c.AgentExecutionID)
	}
	// A turn's earlier row is looked up by the turn (few rows); the rows
	// without a turn by the session's order, up to the row. The session
	// is named in each subquery, so that Citus routes the whole statement
	// to the session's shard.
	sql += `
	AND NOT EXISTS (SELECT 1 FROM ` + d.ThroughIndex(Table+" o", turnIndex) + `
		WHERE o.turn_id = r.turn_id AND o.task_session_id = ? AND ` + before(o, r) + `)
	AND (r.turn_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM ` + d.ThroughIndex(Table+" o", sessionOrderIndex) + `
		WHERE o.task_session_id = ? AND o.turn_id IS NULL AND ` + o[0] + " <= " + r[0] + " AND " + before(o, r) + `))
ORDER BY ` + strings.Join(r[:], direction(backwards)+", ") + direction(backwards) + `
LIMIT ?`
	return sql, append(args, session, session, limit)
}

// direction is an ORDER BY term's direction.
func direction(backwards bool) string {
	if backwards {
		return " DESC"
	}
	return ""
}

// turnRowsStatement selects every row of the turns, in AC-13 order.
func (s *Store) turnRowsStatement(session string, starts []turnStart) (string, []any) {
	d := s.d
	var ids []string
	args := []any{session}
	withoutTurn := false
	for _, t := range starts {
		if t.turn == nil {
			withoutTurn = true
			continue
		}
		ids = append(ids, "?")
		args = append(args, *t.turn)
	}
	var in []string
	if len(ids) > 0 {
		in = append(in, "turn_id IN ("+strings.Join(ids, ", ")+")")
	}
	if withoutTurn {
		in = append(in, "turn_id IS NULL")
	}
	return "SELECT " + columnList("") + " FROM " + Table + " WHERE task_session_id = ? AND (" +
		strings.Join(in, " OR ") + ") ORDER BY " + d.Instant("observed_at") + ", " + d.Bytewise("tool_call_id") + ", " +
		d.Bytewise("agent_execution_id"), args
}
