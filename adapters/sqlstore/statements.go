package sqlstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// This file renders the statements that read the host's messages. Each
// reads them through the dialect's SubagentMessages — the one definition of
// a (recoverable) subagent message per dialect, checked against
// backfill.Recover by a differential fuzz test — so the backfill and the
// health check can never disagree on what a subagent message is.
// testdata/<dialect>/*.sql shows every statement whole.

// StageTable holds, for one backfill transaction on a dialect that stages
// (SQLite), the recoverable messages ranked per (session, tool call id).
const StageTable = "subagentctx_backfill_stage"

// BackfillStatements are the backfill's statements (docs/CONTRACT.md §4.1).
// Either Single is set (one statement returning through and inserted, after
// Plan), or the staged sequence: Stage, Through, Insert, then Drop.
// Insert and Single take one argument, the rows' updated_at.
type BackfillStatements struct {
	Plan, Single   string
	Stage, Through string
	Insert, Drop   string
}

// ranked selects the recoverable messages, ranked newest first per
// (session, tool call id): created_at at the host's precision, then the
// greatest message id byte by byte (AC-21b).
func (s *Store) ranked() string {
	d := s.d
	return `SELECT v.*, ROW_NUMBER() OVER (PARTITION BY v.task_session_id, v.tool_call_id
		ORDER BY v.created DESC, ` + d.Bytewise("v.message_id") + ` DESC) AS rn
	FROM (` + d.SubagentMessages(s.tables) + `) v
	WHERE v.recoverable = 1`
}

// backfillInsert inserts the newest message of each pair from source (a
// relation with the ranked columns) whose session exists (AC-21a), unless
// the pair already has a row under any execution id (docs/CONTRACT.md
// §9.5), and never over a stored row (AC-22). Its one argument is
// updated_at. The session is checked here, on the newest message of each
// pair only, rather than while ranking every message.
func (s *Store) backfillInsert(source string) string {
	values := make([]string, len(core.Columns))
	for i, c := range core.Columns {
		switch c.Name {
		case "id":
			values[i] = "r.message_id"
		case "agent_execution_id":
			values[i] = "'" + core.UnknownExecution + "'"
		case "source":
			values[i] = "'" + string(core.SourceBackfill) + "'"
		case "updated_at":
			values[i] = "?"
		default:
			values[i] = "r." + c.Name
		}
	}
	return `INSERT INTO ` + Table + ` (` + columnList("") + `)
	SELECT ` + strings.Join(values, ", ") + `
	FROM ` + source + ` r
	WHERE r.rn = 1 AND EXISTS (SELECT 1 FROM ` + quote(s.tables.Sessions) + ` x WHERE x.id = r.task_session_id)
		AND NOT EXISTS (SELECT 1 FROM ` + Table + ` t WHERE t.task_session_id = r.task_session_id AND t.tool_call_id = r.tool_call_id)
	ON CONFLICT DO NOTHING`
}

// Backfill renders the backfill for the store's dialect: one scan of the
// messages (AC-23a); backfill_through from every recoverable message, not
// from what this attempt inserts, and never after the insert (AC-24).
func (s *Store) Backfill() BackfillStatements {
	if !s.d.StagesBackfill() {
		// Plan: the insert anti-joins the table it inserts into. Planned
		// as a nested loop over a table the statistics call empty (new,
		// or emptied by a rolled-back pass and vacuumed), each probe
		// re-reads the rows inserted so far: quadratic in the history.
		// Hash joins keep the statement linear whatever the statistics.
		return BackfillStatements{Plan: `SET LOCAL enable_nestloop = off`, Single: `WITH staged AS MATERIALIZED (` + s.ranked() + `),
	inserted AS (` + s.backfillInsert("staged") + `
	RETURNING 1)
SELECT (SELECT MAX(created) FROM staged) AS through, (SELECT count(*) FROM inserted) AS inserted`}
	}
	return BackfillStatements{
		Stage:   `CREATE TEMP TABLE ` + StageTable + ` AS ` + s.ranked(),
		Through: `SELECT MAX(created) FROM ` + StageTable,
		Insert:  s.backfillInsert(StageTable),
		Drop:    `DROP TABLE IF EXISTS ` + StageTable,
	}
}

// HealthStatement is the health check (docs/CONTRACT.md §5.2) as one
// statement, so both sides are read in one snapshot: shortfall and excess as
// two directed differences of distinct (session, tool call id) pairs, never
// netted; collisions between known executions; the last observation and
// the last write after the boundary. The differences are EXCEPTs, not
// correlated NOT EXISTS: planned from a materialized set the statistics
// cannot see, an anti-join may become a nested loop, quadratic in the rows;
// a set difference is hashed or sorted whatever the estimates.
func (s *Store) HealthStatement(capture time.Time) (string, []any) {
	d := s.d
	q := `WITH m AS MATERIALIZED (SELECT v.task_session_id, v.tool_call_id, v.recoverable, v.created FROM (` + d.SubagentMessages(s.tables) + `) v),
	r AS MATERIALIZED (SELECT task_session_id, agent_execution_id, tool_call_id, observed_at FROM ` + Table + `
		WHERE ` + d.Instant("observed_at") + ` >= ?)
SELECT
	(SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM m WHERE recoverable = 1 AND created >= ?
		EXCEPT SELECT task_session_id, tool_call_id FROM ` + Table + `) i) AS shortfall,
	(SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM r
		EXCEPT SELECT task_session_id, tool_call_id FROM m) x) AS excess,
	(SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM r WHERE agent_execution_id <> '` + core.UnknownExecution + `'
		GROUP BY task_session_id, tool_call_id HAVING count(DISTINCT agent_execution_id) > 1) c) AS collisions,
	(SELECT MAX(` + d.Instant("observed_at") + `) FROM r) AS last_observed_us,
	(SELECT MAX(` + d.Instant("updated_at") + `) FROM ` + Table + ` WHERE ` + d.Instant("updated_at") + ` >= ?) AS last_write_us`
	atOrAfter := core.CeilMicro(capture).UnixMicro()
	after := core.CanonicalTime(capture).UnixMicro() + 1
	return q, []any{atOrAfter, d.HostInstantArg(capture), after}
}

// metricSources are the splits every metric is summed over
// (docs/CONTRACT.md §5.3).
var metricSources = []core.Source{core.SourceLive, core.SourceBackfill}

// StatsMetrics are the metric columns statistics sum.
var StatsMetrics = []string{"total_tokens", "tool_use_count", "duration_ms"}

// StatsStatement aggregates the rows in scope (where, with its args): the
// counts, and for each metric and source the number of reported values and
// their sum, split into the high and low 32 bits of each value so that no
// sum can overflow 64 bits on any dialect (the exact total is assembled in
// Go).
func (s *Store) StatsStatement(where string) string {
	cols := []string{
		"count(*) AS n",
		"SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) AS live",
		"SUM(CASE WHEN source = 'backfill' THEN 1 ELSE 0 END) AS backfill",
		"SUM(CASE WHEN turn_id IS NULL THEN 1 ELSE 0 END) AS no_turn",
		"SUM(CASE WHEN agent_execution_id = '" + core.UnknownExecution + "' THEN 1 ELSE 0 END) AS unknown_exec",
		"count(DISTINCT CASE WHEN agent_execution_id <> '" + core.UnknownExecution + "' THEN agent_execution_id END) AS executions",
	}
	for _, m := range StatsMetrics {
		for _, src := range metricSources {
			v := fmt.Sprintf("CASE WHEN source = '%s' THEN %s END", src, m)
			cols = append(cols,
				fmt.Sprintf("count(%s) AS %s_%s_n", v, m, src),
				fmt.Sprintf("SUM(%s / 4294967296) AS %s_%s_hi", v, m, src),
				fmt.Sprintf("SUM(%s %% 4294967296) AS %s_%s_lo", v, m, src))
		}
	}
	return "SELECT " + strings.Join(cols, ",\n\t") + "\nFROM " + Table + where
}

// FanOutStatement counts turns by their number of subagents, over the rows
// in scope that have a turn.
func (s *Store) FanOutStatement(where string) string {
	w := " WHERE turn_id IS NOT NULL"
	if where != "" {
		w = where + " AND turn_id IS NOT NULL"
	}
	return `SELECT n AS subagents, count(*) AS turns FROM (SELECT turn_id, count(*) AS n FROM ` + Table + w +
		` GROUP BY turn_id) x GROUP BY n ORDER BY n`
}

// FirstActivityStatements give, per session in scope, the first activity
// on record: the earliest observed_at of its rows (microseconds) and the
// earliest created_at of its messages (a HostInstant).
func (s *Store) FirstActivityStatements(where string) (rows, messages string) {
	d := s.d
	rows = `SELECT task_session_id, MIN(` + d.Instant("observed_at") + `) AS first FROM ` + Table + where + ` GROUP BY task_session_id`
	mw := " WHERE task_session_id IS NOT NULL"
	if where != "" {
		mw = where + " AND task_session_id IS NOT NULL"
	}
	messages = `SELECT task_session_id, MIN(` + d.HostInstant("created_at") + `) AS first FROM ` + quote(s.tables.Messages) + mw + ` GROUP BY task_session_id`
	return rows, messages
}
