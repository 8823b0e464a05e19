package sqlstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// This file renders the read side's statements. Those that read the
// host's messages read them through the dialect's SubagentMessages — the
// one definition of a (recoverable) subagent message per dialect, checked
// against history.Recover by a differential fuzz test — so the backfill
// and the health check can never disagree on what a subagent message is.
// testdata/<dialect>/*.sql shows every statement whole.

// healthStatements are the health check (docs/CONTRACT.md §5.2) over the
// window from since. They read the sessions active in the window only — a
// message created in it (through an index on the host's created_at, when
// it has one) or a row observed in it (idx_subagents_observed_at) — and
// all of those sessions' messages and rows, so the cost follows the
// window, not the history. Nothing is joined: the subagent messages and
// rows are stacked and grouped per (session, tool call id) pair
// (pairFlags), and each pair's flags answer the questions. Shortfall and
// excess are never netted. One grouping is linear whatever the planner's
// estimates (an anti-join planned as a nested loop over a set it misjudges
// is quadratic), and it keeps every pair within its session.
//
// Their rows are the counts (part 0), then at most pairs of each list
// (part 1: missing; part 2: excess), the earliest first. On one server it
// is one statement, so both sides are read in one snapshot: the active
// sessions and the pairs are materialized once. On a sharded database
// (distributed) it is three statements, the counts and each list, each
// pushed down to the shards whole (each shard finds its own active
// sessions), where a shard's own snapshot is the most a statement gets
// anyway.
//
// A window that is the whole record (whole: since is the coverage bound)
// reads every session on one server: finding the active ones would read
// every message twice. A sharded database finds them all the same: its
// planner pushes the stacked pairs down to the shards only when they are
// joined on the session, and a session without activity in the window
// adds to no count and no list.
func (s *Store) healthStatements(since time.Time, pairs int, distributed, whole bool) []statement {
	// The raw columns find the candidates through their indexes (a
	// superset: the floors); the instants then decide, so that only the
	// sessions truly active in the window are read whole.
	messagesIn, activeArgs := s.d.HostWithin("x.created_at", since, time.Time{})
	rowsIn, rowArgs := s.d.Within("y.observed_at", since, time.Time{})
	activeArgs = append(activeArgs, rowArgs...)
	// UNION ALL, not UNION: a merge that removes duplicates wants both
	// sides in session order, and SQLite then scans the session indexes
	// whole instead of ranging over the time indexes.
	activeSessions := `SELECT x.task_session_id FROM ` + quote(s.tables.Messages) + ` x
		WHERE ` + messagesIn + `
	UNION ALL
	SELECT y.task_session_id FROM ` + Table + ` y WHERE ` + rowsIn
	missing, excess := "p.due = 1 AND p.stored = 0", "p.recent = 1 AND p.messaged = 0"
	doubled := "p.history = 1 AND p.keyed = 1"
	counts := `SELECT ` + fmt.Sprint(healthCounts) + ` AS part,
	COALESCE(SUM(CASE WHEN ` + missing + ` THEN 1 ELSE 0 END), 0) AS shortfall,
	COALESCE(SUM(CASE WHEN ` + excess + ` THEN 1 ELSE 0 END), 0) AS excess,
	COALESCE(SUM(CASE WHEN p.executions > 1 THEN 1 ELSE 0 END), 0) AS collisions,
	COALESCE(SUM(CASE WHEN ` + doubled + ` THEN 1 ELSE 0 END), 0) AS doubled,
	MAX(p.last_observed_us) AS last_observed_us, MAX(p.last_write_us) AS last_write_us,
	CAST(NULL AS TEXT) AS task_session_id, CAST(NULL AS TEXT) AS tool_call_id,
	MIN(CASE WHEN 1 = 0 THEN p.due_first END) AS due_first, CAST(NULL AS BIGINT) AS recent_first
FROM `
	// A list's pair is first seen at its earliest message (missing:
	// due_first, a host instant), or its earliest row in the window (excess)
	// or at all (doubled), in microseconds (recent_first).
	list := func(part int) string {
		due, recent := "p.due_first", "CAST(NULL AS BIGINT)"
		switch part {
		case healthExcess:
			due, recent = "CASE WHEN 1 = 0 THEN p.due_first END", "p.recent_first"
		case healthDoubled:
			due, recent = "CASE WHEN 1 = 0 THEN p.due_first END", "p.stored_first"
		}
		return `SELECT ` + fmt.Sprint(part) + ` AS part, 0 AS shortfall, 0 AS excess, 0 AS collisions, 0 AS doubled,
		CAST(NULL AS BIGINT) AS last_observed_us, CAST(NULL AS BIGINT) AS last_write_us,
		p.task_session_id, p.tool_call_id, ` + due + ` AS due_first, ` + recent + ` AS recent_first FROM `
	}
	tail := func(where, order string) string {
		return ` p
	WHERE ` + where + `
	ORDER BY ` + order + `, ` + s.d.Bytewise("p.task_session_id") + `, ` + s.d.Bytewise("p.tool_call_id") + `
	LIMIT ` + fmt.Sprint(pairs)
	}
	// sharded is the counts and each list as statements of their own,
	// a list run only when the counts say it holds a pair; single, one
	// statement after the CTEs ctes (each ending ",\n").
	sharded := func(grouped string, args []any) []statement {
		st := func(q string) sqldialect.Statement { return sqldialect.Statement{SQL: q, Args: args} }
		return []statement{
			{st(counts + `(` + grouped + `) p`), ""},
			{st(list(healthMissing) + `(` + grouped + `)` + tail(missing, "p.due_first")), "shortfall"},
			{st(list(healthExcess) + `(` + grouped + `)` + tail(excess, "p.recent_first")), "excess"},
			{st(list(healthDoubled) + `(` + grouped + `)` + tail(doubled, "p.stored_first")), "doubled"},
		}
	}
	single := func(ctes, grouped string, args []any) []statement {
		return []statement{{sqldialect.Statement{SQL: `WITH ` + ctes + `p AS MATERIALIZED (` + grouped + `)
` + counts + `p
UNION ALL
SELECT * FROM (` + list(healthMissing) + `p` + tail(missing, "p.due_first") + `) missing
UNION ALL
SELECT * FROM (` + list(healthExcess) + `p` + tail(excess, "p.recent_first") + `) excess
UNION ALL
SELECT * FROM (` + list(healthDoubled) + `p` + tail(doubled, "p.stored_first") + `) doubled
ORDER BY 1`, Args: args}, ""}}
	}
	switch {
	case whole && !distributed:
		grouped, args := s.pairFlags(since, "1 = 1", "1 = 1", nil)
		return single("", grouped, args)
	case distributed:
		active := func(alias string) string {
			return alias + `.task_session_id IN (` + activeSessions + `)`
		}
		return sharded(s.pairFlags(since, active("m"), active("t"), activeArgs))
	}
	in := func(alias string) string {
		return s.d.InFew(alias+`.task_session_id`, `SELECT a.task_session_id FROM a`)
	}
	grouped, args := s.pairFlags(since, in("m"), in("t"), nil)
	return single(`a AS MATERIALIZED (SELECT DISTINCT z.task_session_id FROM (
	`+activeSessions+`) z),
`, grouped, append(activeArgs, args...))
}

// The kinds of row a statement of several says in its part column: the
// health check's and the overview's.
const (
	healthCounts  = 0 // the counts, one row
	healthMissing = 1 // a missing pair
	healthExcess  = 2 // an excess pair
	healthDoubled = 3 // a doubled pair

	overviewGroup   = 1 // a breakdown's group and source: its figures
	overviewOthers  = 2 // a breakdown's groups past the limit, summed
	overviewRank    = 3 // a group's duration at a nearest rank
	overviewSources = 4 // the window's rows of one source
)

// statement is a health statement.
type statement struct {
	sqldialect.Statement
	// Lists names the count, in the first statement's row, of what this
	// statement lists: when that count is zero the list is empty, and
	// the statement is not run.
	Lists string
}

// pairFlags groups the subagent messages and the rows of the sessions
// that messages and rows (the conditions on the raw message m and the row
// t, with activeArgs for each) admit, per (session, tool call id) pair,
// with each pair's flags for the window from since: due (a recoverable
// message created in it), messaged (a subagent message at any time),
// recent (a row observed in it), stored (a row at any time), the known
// executions among its rows observed in it, when each list first saw it,
// its latest observation and write in the window, whether a row of it is
// the backfill's not absorbed (history) and whether one has an execution
// id (keyed): both is one invocation twice, doubled.
func (s *Store) pairFlags(since time.Time, messages, rows string, activeArgs []any) (string, []any) {
	d := s.d
	// Each row's instants are computed once, in its arm of the union, and
	// compared with the window's start by the grouping: an instant is a
	// long expression on SQLite, and written in every test of it, it made
	// the statement slower to prepare and to run.
	q := `SELECT u.task_session_id, u.tool_call_id, MAX(u.due) AS due, MAX(u.messaged) AS messaged,
		MAX(CASE WHEN u.observed_us >= ? THEN 1 ELSE 0 END) AS recent, MAX(u.stored) AS stored,
		count(DISTINCT CASE WHEN u.observed_us >= ? THEN u.execution END) AS executions,
		MIN(u.due_at) AS due_first, MIN(CASE WHEN u.observed_us >= ? THEN u.observed_us END) AS recent_first,
		MAX(CASE WHEN u.observed_us >= ? THEN u.observed_us END) AS last_observed_us,
		MAX(CASE WHEN u.write_us >= ? THEN u.write_us END) AS last_write_us,
		MAX(u.history) AS history, MAX(CASE WHEN u.execution IS NULL THEN 0 ELSE 1 END) AS keyed,
		MIN(u.observed_us) AS stored_first
	FROM (SELECT v.task_session_id, v.tool_call_id,
			CASE WHEN v.recoverable = 1 AND v.created >= ? THEN 1 ELSE 0 END AS due, 1 AS messaged,
			0 AS stored, CAST(NULL AS TEXT) AS execution,
			CASE WHEN v.recoverable = 1 AND v.created >= ? THEN v.created END AS due_at,
			CAST(NULL AS BIGINT) AS observed_us, CAST(NULL AS BIGINT) AS write_us, 0 AS history
		FROM (` + d.SubagentKeys(s.tables, messages) + `) v
		UNION ALL
		SELECT t.task_session_id, t.tool_call_id, 0, 0, 1,
			CASE WHEN t.agent_execution_id <> '` + core.UnknownExecution + `' THEN t.agent_execution_id END,
			CAST(NULL AS BIGINT), ` + d.Instant("t.observed_at") + `, ` + d.Instant("t.updated_at") + `,
			CASE WHEN ` + backfilled("t") + ` THEN 1 ELSE 0 END
		FROM ` + Table + ` t WHERE ` + rows + `) u
	GROUP BY u.task_session_id, u.tool_call_id`
	atOrAfter := storekit.CeilMicro(since).UnixMicro()
	after := storekit.CanonicalTime(since).UnixMicro() + 1
	host := d.HostInstantArg(since)
	args := []any{atOrAfter, atOrAfter, atOrAfter, atOrAfter, after, host, host}
	args = append(args, activeArgs...)
	return q, append(args, activeArgs...)
}

// metricParts are a metric's SQL over one row: an expression that is NULL
// when the row did not report it (what count() counts), and the value's
// high and low 32 bits, which the sums add apart so that no sum can pass
// 64 bits on any dialect. run_tokens (report.RunTokens) is four columns,
// each split apart, so that a row's own sum cannot pass 64 bits either.
func metricParts(m string) (reported, hi, lo string) {
	if m != "run_tokens" {
		return m, m + " / 4294967296", m + " % 4294967296"
	}
	usage := []string{"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
	var his, los []string
	for _, c := range usage {
		his = append(his, "COALESCE("+c+" / 4294967296, 0)")
		los = append(los, "COALESCE("+c+" % 4294967296, 0)")
	}
	return "COALESCE(" + strings.Join(usage, ", ") + ")", strings.Join(his, " + "), strings.Join(los, " + ")
}

// metricColumns are the metrics statistics sum (report.Stats), by name.
func metricColumns() []string {
	var out []string
	for _, m := range storekit.StatsMetrics(new(report.Stats)) {
		out = append(out, m.Column)
	}
	return out
}

// metricSources are the splits every metric is summed over
// (docs/CONTRACT.md §5.3).
var metricSources = []core.Source{core.SourceLive, core.SourceBackfill}

// statsStatement aggregates the rows in scope (where, with its args): the
// counts, and for each metric and source the number of reported values and
// their sum, split into the high and low 32 bits of each value so that no
// sum can overflow 64 bits on any dialect (the exact total is assembled in
// Go).
func (s *Store) statsStatement(where string) string {
	cols := []string{
		"count(*) AS n",
		"SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) AS live",
		"SUM(CASE WHEN source = 'backfill' THEN 1 ELSE 0 END) AS backfill",
		"SUM(CASE WHEN turn_id IS NULL THEN 1 ELSE 0 END) AS no_turn",
		"SUM(is_async) AS background",
		"SUM(CASE WHEN " + unended + " THEN 1 ELSE 0 END) AS no_end",
		"SUM(CASE WHEN " + failed() + " THEN 1 ELSE 0 END) AS failed",
		"SUM(CASE WHEN agent_execution_id = '" + core.UnknownExecution + "' THEN 1 ELSE 0 END) AS unknown_exec",
		"count(DISTINCT CASE WHEN agent_execution_id <> '" + core.UnknownExecution +
			"' THEN agent_execution_id END) AS executions",
	}
	for _, m := range metricColumns() {
		reported, hi, lo := metricParts(m)
		for _, src := range metricSources {
			when := "CASE WHEN source = '" + string(src) + "' THEN "
			name := m + "_" + string(src)
			cols = append(cols, "count("+when+reported+" END) AS "+name+"_n",
				"SUM("+when+hi+" END) AS "+name+"_hi", "SUM("+when+lo+" END) AS "+name+"_lo")
		}
	}
	return "SELECT " + strings.Join(cols, ",\n\t") + "\nFROM " + Table + where
}

// fanOutStatement counts turns by their number of subagents, over the rows
// in scope that have a turn. A turn is counted within its session, which
// also keeps each group on the shard of its session where the table is
// sharded.
func (s *Store) fanOutStatement(where string) string {
	w := " WHERE turn_id IS NOT NULL"
	if where != "" {
		w = where + " AND turn_id IS NOT NULL"
	}
	return `SELECT n AS subagents, count(*) AS turns
	FROM (SELECT task_session_id, turn_id, count(*) AS n FROM ` + Table + w + ` GROUP BY task_session_id, turn_id) x
	GROUP BY n ORDER BY n`
}

// windowed is the table for a read of the rows observed from since: read
// through idx_subagents_observed_at when the window has a start.
func (s *Store) windowed(since time.Time) string {
	if since.IsZero() {
		return Table
	}
	return s.d.ThroughIndex(Table, observedAtIndex)
}

// textArg is a bound text parameter (typed, for PostgreSQL).
const textArg = "CAST(? AS TEXT)"

// sessionsStatement summarises the sessions with rows in the query's
// window (whose id starts with its prefix), the most recently observed
// first, then by session id byte by byte, after its key, at most its
// limit: each (session, turn) is counted first, then the turns of each
// session. Grouped by session, so on a sharded table each shard groups
// its own.
func (s *Store) sessionsStatement(q report.SessionQuery) (string, []any) {
	d := s.d
	where, args := s.d.Within("observed_at", q.Since, q.Until)
	if q.Prefix != "" {
		where += " AND substr(task_session_id, 1, length(" + textArg + ")) = " + textArg
		args = append(args, q.Prefix, q.Prefix)
	}
	sql := `SELECT p.task_session_id, MIN(p.task_id) AS task_id, SUM(p.n) AS subagents, count(p.turn_id) AS turns,
	MAX(CASE WHEN p.turn_id IS NOT NULL THEN p.n END) AS max_fan_out, SUM(p.open) AS open,
	MIN(p.first_us) AS first_us, MAX(p.last_us) AS last_us
FROM (SELECT task_session_id, turn_id, MIN(task_id) AS task_id, count(*) AS n,
		SUM(CASE WHEN settled_at IS NULL THEN 1 ELSE 0 END) AS open,
		` + d.Extreme("MIN", "observed_at") + ` AS first_us, ` + d.Extreme("MAX", "observed_at") + ` AS last_us
	FROM ` + s.windowed(q.Since) + ` WHERE ` + where + ` GROUP BY task_session_id, turn_id) p
GROUP BY p.task_session_id`
	if q.After != nil {
		sql += `
HAVING MAX(p.last_us) < ? OR (MAX(p.last_us) = ? AND ` + d.Bytewise("p.task_session_id") + ` > ` +
			d.Bytewise(textArg) + `)`
		us := storekit.CanonicalTime(q.After.LastObservedAt).UnixMicro()
		args = append(args, us, us, q.After.TaskSessionID)
	}
	sql += `
ORDER BY last_us DESC, ` + d.Bytewise("p.task_session_id")
	if q.Limit > 0 {
		sql += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	return sql, args
}

// overviewDimensions are the breakdowns of report.Overview, by column.
var overviewDimensions = []string{"tool_status", "agent_status", "subagent_type", "model"}

// durationsRanked reports whether a breakdown gives its durations' ranks
// (report.Figures.Duration): the type's and the model's.
func durationsRanked(dim string) bool { return dim == "subagent_type" || dim == "model" }

// failedStatuses is the failed tool statuses as a list of SQL literals.
func failedStatuses() string {
	return "'" + strings.Join(storekit.FailedToolStatuses(), "', '") + "'"
}

// unended is the condition that a row's agent may still end and has not
// (storekit.Unended).
const unended = "(ended_at IS NULL AND (is_async = 1 OR settled_at IS NULL))"

// failed is the condition that a row counts as failed (storekit.Failed):
// a failed tool status or a failed agent status.
func failed() string {
	return "(tool_status IN (" + failedStatuses() + ") OR agent_status IN ('" +
		strings.Join(storekit.FailedAgentStatuses(), "', '") + "'))"
}

// overviewMetrics are a group's metrics by name (report.Figures).
func overviewMetrics() []string {
	var out []string
	for _, m := range storekit.FigureMetrics(new(report.Figures)) {
		out = append(out, m.Column)
	}
	return out
}

// overviewSums are a group's row's figures of its metrics: how many rows
// reported each, and its exact sum in high and low 32 bits.
func overviewSums() []string {
	var cols []string
	for _, m := range overviewMetrics() {
		reported, hi, lo := metricParts(m)
		cols = append(cols, "count("+reported+") AS "+m+"_n", "SUM("+hi+") AS "+m+"_hi", "SUM("+lo+") AS "+m+"_lo")
	}
	return cols
}

// overviewStatement is the overview (docs/CONTRACT.md §5.4) in one
// statement, so one snapshot: the window's rows (w) grouped once per
// combination of the breakdowns' values and source (g: one sort or hash
// of the window, where a GROUP BY per breakdown made four), summed per
// breakdown, value and source (c), the values ranked per breakdown by
// their rows (r), the nearest ranks of the ranked breakdowns' durations
// (d, the dialect's NearestRanks), then the listed groups' figures
// (part 1), the unlisted groups per breakdown (part 2: their rows in n,
// their number in failed), the listed groups' durations at the median's
// and the 95th percentile's nearest rank per source, 'all' for both (part
// 3), and the window's rows per source (part 4). Metric sums are split
// into high and low 32 bits, as in statsStatement.
func (s *Store) overviewStatement(q report.OverviewQuery) (string, []any) {
	d := s.d
	where, args := s.overviewWindow(q)
	var groups, durations []string
	combination := strings.Join(overviewDimensions, ", ") + ", source"
	figures := append([]string{"count(*) AS n", "SUM(failed) AS failed", "SUM(unended) AS unended",
		"count(duration_ms) AS duration_n"}, overviewSums()...)
	for _, dim := range overviewDimensions {
		cols := []string{"'" + dim + "' AS dim", dim + " AS k", "source"}
		for _, f := range figures {
			_, name, _ := strings.Cut(f, " AS ")
			cols = append(cols, "SUM("+name+") AS "+name)
		}
		groups = append(groups, "SELECT "+strings.Join(cols, ", ")+"\n\tFROM g GROUP BY "+dim+", source")
		if durationsRanked(dim) {
			durations = append(durations,
				"SELECT '"+dim+"' AS dim, "+dim+" AS k, source, duration_ms FROM w WHERE duration_ms IS NOT NULL")
		}
	}
	same := func(a, b string) string {
		return "(" + a + ".k = " + b + ".k OR (" + a + ".k IS NULL AND " + b + ".k IS NULL))"
	}
	limit := fmt.Sprint(q.GroupsOrDefault())
	sql := `WITH w AS MATERIALIZED (SELECT tool_status, agent_status, subagent_type, model, source, duration_ms,
		total_tokens, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, tool_use_count,
		CASE WHEN ` + failed() + ` THEN 1 ELSE 0 END AS failed,
		CASE WHEN ` + unended + ` THEN 1 ELSE 0 END AS unended
	FROM ` + s.windowed(q.Since) + ` WHERE ` + where + `),
g AS MATERIALIZED (SELECT ` + combination + `, ` + strings.Join(figures, ", ") + `
	FROM w GROUP BY ` + combination + `),
c AS MATERIALIZED (` + strings.Join(groups, "\n\tUNION ALL ") + `),
r AS MATERIALIZED (SELECT dim, k, SUM(n) AS n, ROW_NUMBER() OVER (PARTITION BY dim
		ORDER BY SUM(n) DESC, CASE WHEN k IS NULL THEN 1 ELSE 0 END, ` + d.Bytewise("k") + `) AS place
	FROM c GROUP BY dim, k),
d AS MATERIALIZED (` + d.NearestRanks(durations) + `)
SELECT ` + fmt.Sprint(overviewGroup) + ` AS part, c.dim, c.k, r.place, c.source, c.n, c.failed, c.unended, c.duration_n,
	c.total_tokens_n, c.total_tokens_hi, c.total_tokens_lo, c.run_tokens_n, c.run_tokens_hi, c.run_tokens_lo,
	c.tool_use_count_n, c.tool_use_count_hi, c.tool_use_count_lo, CAST(NULL AS BIGINT) AS rn,
	CAST(NULL AS BIGINT) AS value
FROM c JOIN r ON r.dim = c.dim AND ` + same("r", "c") + ` WHERE r.place <= ` + limit + `
UNION ALL
SELECT ` + fmt.Sprint(overviewOthers) + `, r.dim, NULL, NULL, NULL, SUM(r.n), count(*), ` +
		`NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, NULL, NULL
FROM r WHERE r.place > ` + limit + ` GROUP BY r.dim
UNION ALL
SELECT ` + fmt.Sprint(overviewRank) + `, d.dim, d.k, r.place, d.source, d.m, ` +
		`NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, d.rn, d.value
FROM d JOIN r ON r.dim = d.dim AND ` + same("r", "d") + ` WHERE r.place <= ` + limit + `
UNION ALL
SELECT ` + fmt.Sprint(overviewSources) + `, NULL, NULL, NULL, w.source, count(*), ` +
		`NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, NULL, NULL
FROM w GROUP BY w.source`
	return sql, args
}

// firstActivityStatements give, per session in scope, the first activity
// on record before the instant before (zero: at any time): the earliest
// observed_at of its rows (microseconds) and the earliest created_at of
// its messages (a HostInstant), and their arguments after the scope's.
func (s *Store) firstActivityStatements(
	where string, before time.Time,
) (rows, messages string, rowArgs, msgArgs []any) {
	d := s.d
	and := func(w, cond string) string {
		if w == "" {
			return " WHERE " + cond
		}
		return w + " AND " + cond
	}
	rowsWhere, msgsWhere := where, and(where, "task_session_id IS NOT NULL")
	if !before.IsZero() {
		var cond string
		cond, rowArgs = d.Within("observed_at", time.Time{}, before)
		rowsWhere = and(where, cond)
		cond, msgArgs = d.HostWithin("created_at", time.Time{}, before)
		msgsWhere = and(msgsWhere, cond)
	}
	rows = `SELECT task_session_id, ` + d.Extreme("MIN", "observed_at") + ` AS first
	FROM ` + Table + rowsWhere + ` GROUP BY task_session_id`
	messages = `SELECT task_session_id, MIN(` + d.HostInstant("created_at") + `) AS first
	FROM ` + quote(s.tables.Messages) + msgsWhere + ` GROUP BY task_session_id`
	return rows, messages, rowArgs, msgArgs
}

// coverageCountsStatement counts, over every session on record (with rows,
// or with messages when the host's table exists), the sessions whose
// coverage is known: activity on record, and none before the coverage
// bound (docs/CONTRACT.md §5.3). Each session is grouped on its own shard
// and only the two counts leave it; the verdicts equal storekit.CoverageOf
// of each session's first activity.
func (s *Store) coverageCountsStatement(bound time.Time, messages bool) (string, []any) {
	d := s.d
	before, args := d.Within("observed_at", time.Time{}, bound)
	union := `SELECT task_session_id, MAX(CASE WHEN ` + before + ` THEN 1 ELSE 0 END) AS early, 1 AS dated
		FROM ` + Table + ` GROUP BY task_session_id`
	if messages {
		instant := d.HostInstant("created_at")
		union += `
		UNION ALL
		SELECT task_session_id, MAX(CASE WHEN ` + instant + ` < ? THEN 1 ELSE 0 END),
			MAX(CASE WHEN ` + instant + ` IS NOT NULL THEN 1 ELSE 0 END)
		FROM ` + quote(s.tables.Messages) + ` WHERE task_session_id IS NOT NULL GROUP BY task_session_id`
		args = append(args, d.HostInstantArg(bound))
	}
	sql := `SELECT count(*) AS sessions, COALESCE(SUM(CASE WHEN f.early = 0 AND f.dated = 1 THEN 1 ELSE 0 END), 0) AS known
FROM (SELECT u.task_session_id, MAX(u.early) AS early, MAX(u.dated) AS dated FROM (
		` + union + `) u
	GROUP BY u.task_session_id) f`
	return sql, args
}
