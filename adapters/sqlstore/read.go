package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/rowmaps"
)

// Activation reads the three keys (docs/CONTRACT.md §5.1).
func (s *Store) Activation(ctx context.Context) (core.Activation, error) {
	return s.activation(s.db.WithContext(ctx))
}

func (s *Store) activation(db *gorm.DB) (core.Activation, error) {
	var kv []struct{ Key, Value string }
	err := db.Raw(`SELECT "key", value FROM `+quote(s.tables.Meta)+` WHERE "key" IN ?`,
		[]string{core.CaptureSinceKey, core.ExecutionSinceKey, core.BackfillThroughKey, core.PrunedBeforeKey}).
		Scan(&kv).Error
	if err != nil {
		return core.Activation{}, s.opError("read activation keys", err)
	}
	keys := make(map[string]string, len(kv))
	for _, p := range kv {
		keys[p.Key] = p.Value
	}
	return core.NewActivation(keys), nil
}

// Health runs the health check (docs/CONTRACT.md §5.2) over the window q
// asks for, in one statement, so both sides are read in one snapshot. It
// does not run without a usable capture_since; collisions are not
// reported in capture_only.
func (s *Store) Health(ctx context.Context, q core.HealthQuery) (core.Health, error) {
	if err := q.Validate(); err != nil {
		return core.Health{}, &core.OpError{Op: "health check", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return core.Health{}, err
	}
	h, since, ok := core.HealthPrecondition(a, q)
	if !ok {
		return h, nil
	}
	distributed, err := s.distributed(ctx)
	if err != nil {
		return core.Health{}, s.opError("health check", err)
	}
	var out []map[string]any
	err = s.d.WithConn(ctx, s.db, func(db *gorm.DB) error {
		for _, st := range s.healthStatements(since, q.PairsOrDefault(), distributed) {
			rows, err := rowmaps.Query(db, st.SQL, st.Args...)
			if err != nil {
				return err
			}
			out = append(out, rows...)
		}
		return nil
	})
	if err != nil {
		return core.Health{}, s.opError("health check", err)
	}
	for _, r := range out {
		if err := s.healthRow(&h, a, r); err != nil {
			return core.Health{}, s.opError("health check", err)
		}
	}
	return h, nil
}

// healthRow reads one row of the health statement into h: the counts
// (part 0), a missing pair (1) or an excess pair (2).
func (s *Store) healthRow(h *core.Health, a core.Activation, r map[string]any) error {
	num := func(col string) (*big.Int, error) { return integer(r[col]) }
	if r["part"] == nil {
		return fmt.Errorf("a health row without its part: %v", r)
	}
	part, err := num("part")
	if err != nil {
		return err
	}
	text := func(col string) string {
		switch v := r[col].(type) {
		case string:
			return v
		case []byte:
			return string(v)
		}
		return ""
	}
	instant := func(col string) (*time.Time, error) {
		if r[col] == nil {
			return nil, nil
		}
		us, err := num(col)
		if err != nil {
			return nil, err
		}
		t := time.UnixMicro(us.Int64()).UTC()
		return &t, nil
	}
	switch part.Int64() {
	case 0:
		counts := map[string]*int64{"shortfall": &h.Shortfall, "excess": &h.Excess}
		var collisions int64
		counts["collisions"] = &collisions
		for col, into := range counts {
			n, err := num(col)
			if err != nil {
				return err
			}
			*into = n.Int64()
		}
		if a.ExecutionSince.Present {
			h.Collisions = &collisions
		}
		if h.LastObservedAt, err = instant("last_observed_us"); err != nil {
			return err
		}
		h.LastWriteAt, err = instant("last_write_us")
		return err
	case 1:
		first, err := s.d.ParseHostInstant(r["due_first"])
		if err != nil || first == nil {
			return fmt.Errorf("a missing pair's first message %v: %v", r["due_first"], err)
		}
		h.Missing = append(h.Missing, core.Pair{TaskSessionID: text("task_session_id"),
			ToolCallID: text("tool_call_id"), FirstSeen: *first})
	case 2:
		first, err := instant("recent_first")
		if err != nil || first == nil {
			return fmt.Errorf("an excess pair's first row %v: %v", r["recent_first"], err)
		}
		h.Extra = append(h.Extra, core.Pair{TaskSessionID: text("task_session_id"),
			ToolCallID: text("tool_call_id"), FirstSeen: *first})
	}
	return nil
}

func micros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMicro(v.Int64).UTC()
	return &t
}

// scope is a StatsQuery as a WHERE clause with its argument.
func scope(q core.StatsQuery) (string, []any) {
	switch {
	case q.TaskSessionID != "":
		return " WHERE task_session_id = ?", []any{q.TaskSessionID}
	case q.TaskID != "":
		return " WHERE task_id = ?", []any{q.TaskID}
	}
	return "", nil
}

// Stats computes coverage-aware statistics with SQL aggregates; nothing is
// loaded row by row (docs/CONTRACT.md §5.3).
func (s *Store) Stats(ctx context.Context, q core.StatsQuery) (core.Stats, error) {
	if err := q.Validate(); err != nil {
		return core.Stats{}, &core.OpError{Op: "stats", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return core.Stats{}, err
	}
	st := core.Stats{Query: q, Activation: a}
	where, args := scope(q)
	db := s.db.WithContext(ctx)
	aggs, err := rowmaps.Query(db, s.statsStatement(where), args...)
	if err != nil {
		return core.Stats{}, s.opError("stats", err)
	}
	if len(aggs) != 1 {
		return core.Stats{}, &core.OpError{
			Op:  "stats",
			Err: fmt.Errorf("the aggregate returned %d rows, want 1", len(aggs)),
		}
	}
	agg := aggs[0]
	var bad error
	n := func(name string) int64 {
		v, err := integer(agg[name])
		if err != nil {
			bad = errors.Join(bad, fmt.Errorf("%s: %w", name, err))
			return 0
		}
		return v.Int64()
	}
	st.Subagents, st.Live, st.Backfill = n("n"), n("live"), n("backfill")
	st.RowsWithoutTurn, st.UnknownExecutionRows = n("no_turn"), n("unknown_exec")
	if a.ExecutionSince.Present {
		executions := n("executions")
		st.DistinctExecutions = &executions
	}
	for _, m := range st.Metrics() {
		for _, part := range []struct {
			src  core.Source
			dst  *core.Metric
			rows int64
		}{{core.SourceLive, &m.Stats.Live, st.Live}, {core.SourceBackfill, &m.Stats.Backfill, st.Backfill}} {
			prefix := m.Column + "_" + string(part.src)
			hi, err := integer(agg[prefix+"_hi"])
			if err != nil {
				return core.Stats{}, &core.OpError{Op: "stats", Err: err}
			}
			lo, err := integer(agg[prefix+"_lo"])
			if err != nil {
				return core.Stats{}, &core.OpError{Op: "stats", Err: err}
			}
			sum := hi.Lsh(hi, 32)
			sum.Add(sum, lo)
			part.dst.Set(part.rows, n(prefix+"_n"), sum)
		}
		all := new(big.Int)
		for _, p := range []*core.Metric{&m.Stats.Live, &m.Stats.Backfill} {
			if p.Sum != nil {
				all.Add(all, p.Sum)
			}
		}
		m.Stats.All.Set(st.Subagents, m.Stats.Live.Reported+m.Stats.Backfill.Reported, all)
	}
	if bad != nil {
		return core.Stats{}, &core.OpError{Op: "stats", Err: bad}
	}
	if err := db.Raw(s.fanOutStatement(where), args...).Scan(&st.FanOutPerTurn).Error; err != nil {
		return core.Stats{}, s.opError("stats: fan-out", err)
	}
	if st.FanOutPerTurn == nil {
		st.FanOutPerTurn = []core.FanOut{}
	}
	if err := s.coverage(ctx, q, &st); err != nil {
		return core.Stats{}, err
	}
	return st, nil
}

// integer reads an aggregate (an integer, numeric text, or NULL for 0).
func integer(v any) (*big.Int, error) {
	switch x := v.(type) {
	case nil:
		return new(big.Int), nil
	case int64:
		return big.NewInt(x), nil
	case []byte:
		return integer(string(x))
	case string:
		if i, ok := new(big.Int).SetString(x, 10); ok {
			return i, nil
		}
	case float64:
		if f := big.NewFloat(x); f.IsInt() {
			i, _ := f.Int(nil)
			return i, nil
		}
	}
	return nil, fmt.Errorf("aggregate %v (%T) is not an integer", v, v)
}

// Sessions implements core.Reader: the summaries from one grouping, each
// with its coverage verdict from its first activity.
func (s *Store) Sessions(ctx context.Context, limit int) ([]core.SessionSummary, error) {
	if err := (core.Page{Limit: limit}).Validate(); err != nil {
		return nil, &core.OpError{Op: "sessions", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return nil, err
	}
	var out []struct {
		TaskSessionID, TaskID             string
		Subagents, Turns, MaxFanOut, Open int64
		FirstUs, LastUs                   int64
	}
	if err := s.db.WithContext(ctx).Raw(s.sessionsStatement(limit)).Scan(&out).Error; err != nil {
		return nil, s.opError("sessions", err)
	}
	sums := make([]core.SessionSummary, len(out))
	if len(out) == 0 {
		return sums, nil
	}
	// The listed sessions' first activity; for many, every session's (a
	// bound parameter each would pass the drivers' limits).
	where, ids := "", []any{}
	if len(out) <= 500 {
		marks := make([]string, len(out))
		for i, o := range out {
			ids, marks[i] = append(ids, o.TaskSessionID), "?"
		}
		where = " WHERE task_session_id IN (" + strings.Join(marks, ", ") + ")"
	}
	first, err := s.firstActivity(ctx, where, ids)
	if err != nil {
		return nil, err
	}
	for i, o := range out {
		sums[i] = core.SessionSummary{TaskSessionID: o.TaskSessionID, TaskID: o.TaskID, Subagents: o.Subagents,
			Turns: o.Turns, MaxFanOut: o.MaxFanOut, Open: o.Open,
			FirstObservedAt: time.UnixMicro(o.FirstUs).UTC(), LastObservedAt: time.UnixMicro(o.LastUs).UTC(),
			Coverage: core.CoverageOf(a, o.TaskSessionID, first[o.TaskSessionID])}
	}
	return sums, nil
}

// coverage gives each session in scope a verdict from its first activity.
func (s *Store) coverage(ctx context.Context, q core.StatsQuery, st *core.Stats) error {
	where, args := scope(q)
	first, err := s.firstActivity(ctx, where, args)
	if err != nil {
		return err
	}
	st.AddCoverage(first)
	return nil
}

// firstActivity is, per session in scope (where, with its args), the
// earliest of its rows' observed_at and its messages' created_at, at the
// host's precision (nil when neither is an instant).
func (s *Store) firstActivity(ctx context.Context, where string, args []any) (map[string]*time.Time, error) {
	rowsQ, msgsQ := s.firstActivityStatements(where)
	first := map[string]*time.Time{}
	earliest := func(session string, t *time.Time) {
		if cur, ok := first[session]; !ok || (t != nil && (cur == nil || t.Before(*cur))) {
			first[session] = t
		}
	}
	var rows []struct {
		TaskSessionID string
		First         sql.NullInt64
	}
	if err := s.db.WithContext(ctx).Raw(rowsQ, args...).Scan(&rows).Error; err != nil {
		return nil, s.opError("first activity", err)
	}
	for _, r := range rows {
		earliest(r.TaskSessionID, micros(r.First))
	}
	if ok, err := s.d.TableExists(ctx, s.db, s.tables.Messages); err != nil {
		return nil, s.opError("first activity", err)
	} else if ok {
		var msgs []map[string]any
		err := s.d.WithConn(ctx, s.db, func(db *gorm.DB) (err error) {
			msgs, err = rowmaps.Query(db, msgsQ, args...)
			return err
		})
		if err != nil {
			return nil, s.opError("first activity", err)
		}
		for _, m := range msgs {
			t, err := s.d.ParseHostInstant(m["first"])
			if err != nil {
				return nil, &core.OpError{Op: "first activity", Err: err}
			}
			session, _ := m["task_session_id"].(string)
			if b, ok := m["task_session_id"].([]byte); ok {
				session = string(b)
			}
			earliest(session, t)
		}
	}
	return first, nil
}
