package sqlstore

import (
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// This file writes storekit.Merge's rules as SQL, once, for every statement
// that merges: the upsert (a frame over the stored row), the backfill
// meeting a row live frames wrote first, and the repair of a pair an
// earlier build left with two rows (history under live: storekit.MergeHistory).
// Each statement says how it refers to the stored and the incoming value
// of a column.

// ref is how a statement refers to one side's value of a column.
type ref = func(column string) string

// mergeExpr is the value storekit.MergeInto gives a column from its stored and
// incoming values, as its declared rule says (docs/CONTRACT.md §3.2), or
// "" for a column the rule never changes (key, write-once). Instants are
// compared as stored: on SQLite the library writes every instant in one
// text form (UTC, a four-digit year, the fraction without trailing zeros,
// then "+00:00"), whose byte order is the instants' order, so no
// conversion is needed on the write path. In an
// UPDATE's SET list every reference reads the row as it was before the
// statement, on both dialects, so the order of assignments does not
// matter.
func mergeExpr(c storekit.Column, stored, incoming ref) string {
	s, in := stored(c.Name), incoming(c.Name)
	switch c.Rule {
	case storekit.RuleFirstWins:
		return "COALESCE(" + s + ", " + in + ")"
	case storekit.RuleFillForward:
		return "COALESCE(" + in + ", " + s + ")"
	case storekit.RuleAgentStatus:
		return "CASE WHEN " + in + " = '" + storekit.AgentStatusUnknown + "' AND " + stored("ended_at") +
			" IS NOT NULL THEN " + s + " ELSE COALESCE(" + in + ", " + s + ") END"
	case storekit.RuleFrozenOnceSettled:
		settled := stored(storekit.SettledAtColumn)
		return "CASE WHEN " + settled + " IS NOT NULL THEN " + s + " ELSE COALESCE(" + in + ", " + s + ") END"
	case storekit.RuleSticky:
		return "CASE WHEN " + s + " = 1 OR " + in + " = 1 THEN 1 ELSE 0 END"
	case storekit.RuleLastWrite:
		return in
	case storekit.RuleLargest:
		return "CASE WHEN " + in + " IS NOT NULL AND (" + s + " IS NULL OR " + in + " > " + s + ") THEN " + in +
			" ELSE " + s + " END"
	case storekit.RuleEarliest:
		return "CASE WHEN " + in + " IS NOT NULL AND (" + s + " IS NULL OR " + in + " <= " + s + ") THEN " + in +
			" ELSE " + s + " END"
	case storekit.RuleEnd:
		return "CASE WHEN " + incoming(storekit.StartedAtColumn) + " > " + s + " THEN " + in +
			" ELSE COALESCE(" + s + ", " + in + ") END"
	}
	return ""
}

// excluded refers to the upsert's incoming row; current, qualified with the
// table, to the stored one (PostgreSQL rejects an unqualified column in DO
// UPDATE as ambiguous; SQLite would silently accept it).
func excluded(c string) string { return "excluded." + c }
func current(c string) string  { return `"` + Table + `"."` + c + `"` }

// mergeSet is storekit.Merge written as the upsert's DO UPDATE, one assignment
// per column of cols from its declared rule (AC-14: no read-then-write). Key
// and write-once columns are absent: they never change.
func mergeSet(cols []storekit.Column) clause.Set {
	var set clause.Set
	for _, c := range cols {
		if e := mergeExpr(c, current, excluded); e != "" {
			set = append(set, clause.Assignment{Column: clause.Column{Name: c.Name}, Value: clause.Expr{SQL: e}})
		}
	}
	return set
}

// historySet is storekit.MergeHistory as an UPDATE's SET list over a row live
// frames wrote first (target refers to it), with history the stored side:
// history gives the write-once columns (but the id, which the row keeps)
// and what its rules let it keep, the row's own values follow the
// ordinary rules, updated_at becomes written ("": it stays). The key
// columns never change: the row keeps its execution id. Only the columns
// has admits are set (nil: all of them).
func historySet(history, target ref, written string, has func(column string) bool) string {
	var set []string
	for _, c := range columns {
		switch {
		case has != nil && !has(c.Name):
		case c.Rule == storekit.RuleKey || c.Name == "id":
		case c.Rule == storekit.RuleWriteOnce:
			set = append(set, c.Name+" = "+history(c.Name))
		case c.Rule == storekit.RuleLastWrite:
			if written != "" {
				set = append(set, c.Name+" = "+written)
			}
		case c.Rule == storekit.RuleEnd && has != nil && !has(storekit.StartedAtColumn):
			// No start to reopen it by: the end is first wins.
			c.Rule = storekit.RuleFirstWins
			set = append(set, c.Name+" = "+mergeExpr(c, history, target))
		case c.Rule == storekit.RuleAgentStatus && has != nil && !has("ended_at"):
			// No end to keep a status for: fill forward.
			c.Rule = storekit.RuleFillForward
			set = append(set, c.Name+" = "+mergeExpr(c, history, target))
		default:
			set = append(set, c.Name+" = "+mergeExpr(c, history, target))
		}
	}
	return strings.Join(set, ",\n\t\t")
}

// firstOfPair is a condition on alias's row: no other row of its (session,
// tool call id) pair, among those the extra condition on o admits, comes
// before it in AC-13 order (observed_at, then the execution id byte by
// byte). History merges into that row, the one live frames recorded first.
func (s *Store) firstOfPair(alias, extra string) string {
	d := s.d
	o, a := d.Instant("o.observed_at"), d.Instant(alias+".observed_at")
	oe, ae := d.Bytewise("o.agent_execution_id"), d.Bytewise(alias+".agent_execution_id")
	return `NOT EXISTS (SELECT 1 FROM ` + Table + ` o WHERE ` + samePair("o", alias) + extra + `
			AND (` + o + ` < ` + a + ` OR (` + o + ` = ` + a + ` AND ` + oe + ` < ` + ae + `)))`
}

// samePair is the condition that rows a and b are of one (session, tool
// call id) pair.
func samePair(a, b string) string {
	return a + ".task_session_id = " + b + ".task_session_id AND " + a + ".tool_call_id = " + b + ".tool_call_id"
}

// backfilled is the condition on alias's row that it is a row the backfill
// wrote, not yet absorbed by a live one (storekit.Absorbs).
func backfilled(alias string) string {
	if alias != "" {
		alias += "."
	}
	return alias + "agent_execution_id = '" + core.UnknownExecution + "' AND " +
		alias + "source = '" + string(core.SourceBackfill) + "'"
}

// historyOf is the condition that selects, among the rows, the one the
// backfill wrote for the pair of an inserted row (new refers to its
// values), not yet absorbed by a live one (storekit.Absorbs).
func historyOf(new ref) string {
	return `task_session_id = ` + new("task_session_id") + ` AND tool_call_id = ` + new("tool_call_id") +
		` AND agent_execution_id = '` + core.UnknownExecution + `' AND source = '` + string(core.SourceBackfill) + `'`
}

// absorbing is storekit.Absorbed as the SET list a dialect's trigger runs
// over the row just inserted (target), history's values referred to by
// history: MergeHistory, and history's id; updated_at stays the insert's.
func absorbing(history, target ref) string {
	return historySet(history, target, "", nil) + ",\n\t\tid = " + history("id")
}

// sparse is whether the upsert may leave column c out for a row that has no
// value for it: a column only some sources report (LiveOnly: the run's
// usage, the agent's own start) whose rule keeps the stored value when the
// frame has none, so that naming it with NULL changes nothing. Most frames
// carry none of them; the statement without them (leanColumns) spares such
// a frame their placeholders and merge expressions, about a tenth of the
// pure-Go SQLite driver's upsert. The agent's end is not sparse: a NULL end
// beside a later start reopens the run (storekit.RuleEnd).
func sparse(c storekit.Column) bool {
	return c.LiveOnly && (c.Rule == storekit.RuleLargest || c.Rule == storekit.RuleEarliest)
}

// columns are the declaration (storekit.Columns), read once: every
// statement and argument list is built from it.
var columns = storekit.Columns()

// leanColumns are storekit.Columns without the sparse ones, which
// sparseColumns are.
var (
	leanColumns   = slices.DeleteFunc(slices.Clone(columns), sparse)
	sparseColumns = slices.DeleteFunc(slices.Clone(columns), func(c storekit.Column) bool { return !sparse(c) })
)

// isLean is whether row has no value for any sparse column: the lean
// upsert writes it as the whole one would.
func isLean(row *core.Subagent) bool {
	for _, c := range sparseColumns {
		if !c.IsNull(row) {
			return false
		}
	}
	return true
}

// upsertParts are the parts of the upsert of n rows naming cols, which
// the dialect assembles: GORM quotes the names and renders the merge
// rules' SET list for the handle's dialect, and binds no value.
func (s *Store) upsertParts(n int, cols []storekit.Column) (sqldialect.UpsertParts, error) {
	stmt := &gorm.Statement{DB: s.db.Session(&gorm.Session{DryRun: true, NewDB: true}), Table: Table}
	render := func(build func()) string {
		stmt.SQL.Reset()
		build()
		return stmt.SQL.String()
	}
	quoted := func(names []string) string {
		return render(func() {
			stmt.WriteByte('(')
			for i, name := range names {
				if i > 0 {
					stmt.WriteByte(',')
				}
				stmt.WriteQuoted(name)
			}
			stmt.WriteByte(')')
		})
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	table := render(func() { clause.Insert{Table: clause.Table{Name: Table}}.Build(stmt) })
	into := "INSERT " + table + " " + quoted(append(names, seamColumn.Name))
	set := render(func() { mergeSet(cols).Build(stmt) })
	return sqldialect.UpsertParts{Into: into, Key: quoted(storekit.KeyColumns()), Set: set, Rows: n, Columns: cols,
		History: historyOf, Absorb: absorbing, HistoryIndex: historyIndex}, stmt.Error
}

// repairStatements merge, in every (session, tool call id) pair an earlier
// build (or the reference host's own writer) left with a backfilled row
// and a row under an execution id, the backfilled row into the first
// other row (history under live, storekit.MergeHistory), then delete the
// backfilled rows so merged. The update takes updated_at; the count of
// rows it updates is the number of pairs repaired. It runs before the
// shape step adds the declared columns the table lacks, so it merges the
// columns the table has (has; nil: every declared one). only is a
// further condition on the pair of a row (by its alias): the pass's seam
// check repairs the pairs of its unchecked rows alone; nil, the pairs
// holding more than one row, found by one grouping of the table — which
// spares every history row of a whole table a look for its pair's other
// rows (SQLite has no index that finds a pair's rows under every
// execution id, so that look reads the session's rows).
func (s *Store) repairStatements(has func(column string) bool, only ref) (merge, remove string) {
	if only == nil {
		only = func(alias string) string {
			return `(` + alias + `.task_session_id, ` + alias + `.tool_call_id) IN (SELECT task_session_id, tool_call_id
		FROM ` + Table + ` GROUP BY task_session_id, tool_call_id HAVING count(*) > 1)`
		}
	}
	known := " AND o.agent_execution_id <> '" + core.UnknownExecution + "'"
	set := historySet(func(c string) string { return "b." + c }, func(c string) string { return "t." + c }, "?", has)
	merge = `UPDATE ` + Table + ` AS t SET ` + set + `
	FROM ` + Table + ` AS b
	WHERE ` + backfilled("b") + ` AND ` + samePair("t", "b") + `
		AND t.agent_execution_id <> '` + core.UnknownExecution + `' AND ` + s.firstOfPair("t", known)
	remove = `DELETE FROM ` + Table + ` WHERE ` + backfilled(Table) + `
	AND EXISTS (SELECT 1 FROM ` + Table + ` o WHERE ` + samePair("o", Table) + known + `)`
	merge += `
		AND ` + only("b")
	remove += `
	AND ` + only(Table)
	return merge, remove
}
