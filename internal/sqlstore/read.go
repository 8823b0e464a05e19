package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

var _ core.Reader = (*Store)(nil)

// Activation reads the three keys (SPEC §4, consumer contract).
func (s *Store) Activation(ctx context.Context) (core.Activation, error) {
	var kv []struct{ Key, Value string }
	err := s.db.WithContext(ctx).Raw(`SELECT "key", value FROM `+core.QuoteIdentifier(s.tables.Meta)+` WHERE "key" IN ?`,
		[]string{core.KeyCaptureSince, core.KeyExecutionSince, core.KeyBackfillThrough}).Scan(&kv).Error
	if err != nil {
		return core.Activation{}, s.opError("read activation keys", core.Key{}, err)
	}
	keys := make(map[string]string, len(kv))
	for _, p := range kv {
		keys[p.Key] = p.Value
	}
	return core.NewActivation(keys), nil
}

// subagentMessages selects, from every message at or after a bound instant
// (the first argument), the subagent messages with their identities, metadata
// read as {} when malformed (AC-28b).
func (s *Store) subagentMessages() string {
	d := s.d
	return `SELECT x.task_session_id, x.task_id, ` + d.JSONText("x.doc", "tool_call_id") + ` AS tool_call_id
		FROM (SELECT task_session_id, task_id, created_at, ` + d.MessageDocument("metadata") + ` AS doc
		      FROM ` + core.QuoteIdentifier(s.tables.Messages) + ` ` + d.Fence() + `) x
		WHERE ` + d.JSONText("x.doc", "normalized", "kind") + ` = 'subagent_task' AND ` + d.Instant("x.created_at") + ` >= ?`
}

// Health runs the health check (AC-28 … AC-29) in one statement, so both
// sides are read in one snapshot. It does not run without capture_since.
func (s *Store) Health(ctx context.Context) (core.Health, error) {
	a, err := s.Activation(ctx)
	if err != nil {
		return core.Health{}, err
	}
	switch {
	case !a.CaptureSince.Present:
		return core.Health{Reason: "not activated: " + core.KeyCaptureSince + " is absent, so no absence means anything"}, nil
	case !a.CaptureSince.Usable():
		return core.Health{Reason: core.KeyCaptureSince + " does not parse: " + a.CaptureSince.ParseError}, nil
	}
	capture := *a.CaptureSince.Time
	q, args := s.HealthStatement(capture)
	var out struct {
		Shortfall, Excess, Collisions int64
		LastUs                        sql.NullInt64
	}
	if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&out).Error; err != nil {
		return core.Health{}, s.opError("health check", core.Key{}, err)
	}
	h := core.Health{Ran: true, CaptureSince: &capture, Shortfall: out.Shortfall, Excess: out.Excess, Collisions: out.Collisions}
	if out.LastUs.Valid {
		t := time.UnixMicro(out.LastUs.Int64).UTC()
		h.LastObservedAt = &t
	}
	return h, nil
}

// HealthStatement is the health check's one statement for a capture_since
// instant: shortfall and excess as two directed anti-joins over distinct
// (task_session_id, tool_call_id) pairs, never netted; the collisions; the
// last observation.
func (s *Store) HealthStatement(capture time.Time) (string, []any) {
	q := `WITH m AS MATERIALIZED (` + s.subagentMessages() + `),
		r AS MATERIALIZED (SELECT task_session_id, tool_call_id, observed_at FROM ` + core.Table + `
		                   WHERE ` + s.d.Instant("observed_at") + ` >= ?)
	SELECT
		(SELECT count(*) FROM (SELECT DISTINCT task_session_id, tool_call_id FROM m
		                       WHERE task_session_id <> '' AND task_id <> '' AND tool_call_id IS NOT NULL) i
		 WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.task_session_id = i.task_session_id AND r.tool_call_id = i.tool_call_id)) AS shortfall,
		(SELECT count(*) FROM (SELECT DISTINCT task_session_id, tool_call_id FROM r) x
		 WHERE NOT EXISTS (SELECT 1 FROM m WHERE m.task_session_id = x.task_session_id AND m.tool_call_id = x.tool_call_id)) AS excess,
		(SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM r GROUP BY task_session_id, tool_call_id HAVING count(*) > 1) c) AS collisions,
		(SELECT MAX(` + s.d.Instant("observed_at") + `) FROM r) AS last_us`
	us := capture.UnixMicro()
	return q, []any{us, us}
}

// Stats computes coverage-aware statistics with SQL aggregates; nothing is
// loaded row by row.
func (s *Store) Stats(ctx context.Context, q core.StatsQuery) (core.Stats, error) {
	if err := q.Validate(); err != nil {
		return core.Stats{}, &core.OpError{Op: "stats", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return core.Stats{}, err
	}
	st := core.Stats{Query: q, Activation: a, ExecutionIdentities: a.ExecutionSince.Present}
	where, args := "", []any{}
	switch {
	case q.TaskSessionID != "":
		where, args = " WHERE task_session_id = ?", []any{q.TaskSessionID}
	case q.TaskID != "":
		where, args = " WHERE task_id = ?", []any{q.TaskID}
	}
	db := s.db.WithContext(ctx)
	var agg struct {
		N, Live, Backfill, NoTurn, UnknownExec, Executions sql.NullInt64
		TokensN, UsesN, DurationN                          int64
		TokensSum, UsesSum, DurationSum                    sql.NullString
	}
	err = db.Raw(`SELECT count(*) AS n,
		SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) AS live,
		SUM(CASE WHEN source = 'backfill' THEN 1 ELSE 0 END) AS backfill,
		SUM(CASE WHEN turn_id IS NULL THEN 1 ELSE 0 END) AS no_turn,
		SUM(CASE WHEN agent_execution_id = 'unknown' THEN 1 ELSE 0 END) AS unknown_exec,
		count(DISTINCT CASE WHEN agent_execution_id <> 'unknown' THEN agent_execution_id END) AS executions,
		count(total_tokens) AS tokens_n, SUM(total_tokens) AS tokens_sum,
		count(tool_use_count) AS uses_n, SUM(tool_use_count) AS uses_sum,
		count(duration_ms) AS duration_n, SUM(duration_ms) AS duration_sum
		FROM `+core.Table+where, args...).Scan(&agg).Error
	if err != nil {
		return core.Stats{}, s.opError("stats", core.Key{}, err)
	}
	st.Subagents, st.Live, st.Backfill = agg.N.Int64, agg.Live.Int64, agg.Backfill.Int64
	st.RowsWithoutTurn, st.UnknownExecutionRows, st.DistinctExecutions = agg.NoTurn.Int64, agg.UnknownExec.Int64, agg.Executions.Int64
	for _, m := range []struct {
		dst *core.Metric
		n   int64
		sum sql.NullString
	}{{&st.TotalTokens, agg.TokensN, agg.TokensSum}, {&st.ToolUseCount, agg.UsesN, agg.UsesSum}, {&st.DurationMs, agg.DurationN, agg.DurationSum}} {
		*m.dst, err = metric(st.Subagents, m.n, m.sum)
		if err != nil {
			return core.Stats{}, &core.OpError{Op: "stats", Err: err}
		}
	}
	turnWhere := " WHERE turn_id IS NOT NULL"
	if where != "" {
		turnWhere = where + " AND turn_id IS NOT NULL"
	}
	if err := db.Raw(`SELECT n AS subagents, count(*) AS turns FROM (SELECT turn_id, count(*) AS n FROM `+core.Table+turnWhere+
		` GROUP BY turn_id) x GROUP BY n ORDER BY n`, args...).Scan(&st.FanOutPerTurn).Error; err != nil {
		return core.Stats{}, s.opError("stats: fan-out", core.Key{}, err)
	}
	if err := s.coverage(ctx, q, &st); err != nil {
		return core.Stats{}, err
	}
	return st, nil
}

// metric builds a Metric; sum arrives as text because PostgreSQL's SUM of
// BIGINT is NUMERIC.
func metric(rows, reported int64, sum sql.NullString) (core.Metric, error) {
	m := core.Metric{Reported: reported, Unreported: rows - reported}
	if !sum.Valid {
		return m, nil
	}
	v, err := strconv.ParseInt(sum.String, 10, 64)
	if err != nil {
		return m, fmt.Errorf("sum %s does not fit in 64 bits", sum.String)
	}
	m.Sum = v
	if reported > 0 {
		avg := float64(v) / float64(reported)
		m.Average = &avg
	}
	return m, nil
}

// coverage gives each session in scope a verdict from its first activity:
// the earliest of its messages' created_at and its rows' observed_at.
func (s *Store) coverage(ctx context.Context, q core.StatsQuery, st *core.Stats) error {
	db := s.db.WithContext(ctx)
	rowsScope, msgScope, args := "", "", []any{}
	switch {
	case q.TaskSessionID != "":
		rowsScope, msgScope = " WHERE task_session_id = ?", " WHERE task_session_id = ?"
		args = []any{q.TaskSessionID, q.TaskSessionID}
	case q.TaskID != "":
		rowsScope, msgScope = " WHERE task_id = ?", " WHERE task_id = ?"
		args = []any{q.TaskID, q.TaskID}
	}
	first := `SELECT task_session_id, MIN(` + s.d.Instant("observed_at") + `) AS first_us FROM ` + core.Table + rowsScope + ` GROUP BY task_session_id`
	if ok, err := s.d.TableExists(ctx, s.db, s.tables.Messages); err != nil {
		return s.opError("stats: coverage", core.Key{}, err)
	} else if ok {
		first += ` UNION ALL SELECT task_session_id, MIN(` + s.d.Instant("created_at") + `) FROM ` +
			core.QuoteIdentifier(s.tables.Messages) + msgScope + ` GROUP BY task_session_id`
	} else {
		args = args[:len(args)/2]
	}
	perSession := `SELECT task_session_id, MIN(first_us) AS first_us FROM (` + first + `) f GROUP BY task_session_id`
	if q == (core.StatsQuery{}) {
		// The whole store: counts only, computed in SQL.
		var cap any = nil
		if st.Activation.CaptureSince.Usable() {
			cap = st.Activation.CaptureSince.Time.UnixMicro()
		}
		var c struct{ Known, Total int64 }
		if err := db.Raw(`SELECT count(*) AS total, COALESCE(SUM(CASE WHEN first_us >= ? THEN 1 ELSE 0 END), 0) AS known FROM (`+perSession+`) p`,
			append([]any{cap}, args...)...).Scan(&c).Error; err != nil {
			return s.opError("stats: coverage", core.Key{}, err)
		}
		st.KnownSessions, st.UnknownSessions = c.Known, c.Total-c.Known
		return nil
	}
	var firsts []struct {
		TaskSessionID string
		FirstUs       sql.NullInt64
	}
	if err := db.Raw(perSession+` ORDER BY task_session_id`, args...).Scan(&firsts).Error; err != nil {
		return s.opError("stats: coverage", core.Key{}, err)
	}
	if q.TaskSessionID != "" && len(firsts) == 0 {
		firsts = append(firsts, struct {
			TaskSessionID string
			FirstUs       sql.NullInt64
		}{TaskSessionID: q.TaskSessionID})
	}
	for _, f := range firsts {
		var t *time.Time
		if f.FirstUs.Valid {
			v := time.UnixMicro(f.FirstUs.Int64).UTC()
			t = &v
		}
		c := core.CoverageOf(st.Activation, f.TaskSessionID, t)
		st.Sessions = append(st.Sessions, c)
		if c.Coverage == core.Known {
			st.KnownSessions++
		} else {
			st.UnknownSessions++
		}
	}
	return nil
}
