package memory

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

var _ core.Reader = (*Store)(nil)

// Activation reports an unactivated store: the memory adapter has no meta
// table, so no absence in it means anything.
func (s *Store) Activation(ctx context.Context) (core.Activation, error) {
	return core.NewActivation(nil), ctx.Err()
}

// Health does not run on the memory adapter, which has no capture_since
// and no host messages; the report says so.
func (s *Store) Health(ctx context.Context) (core.Health, error) {
	return core.Health{Reason: "not activated: the memory store has no " + core.KeyCaptureSince + " and no host messages"}, ctx.Err()
}

// Stats computes the same statistics as the SQL adapters, over the rows in
// memory; every session's coverage is unknown (the store is not activated).
func (s *Store) Stats(ctx context.Context, q core.StatsQuery) (core.Stats, error) {
	if err := q.Validate(); err != nil {
		return core.Stats{}, &core.OpError{Op: "stats", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return core.Stats{}, err
	}
	st := core.Stats{Query: q, Activation: a, ExecutionIdentities: a.ExecutionSince.Present}
	perTurn := map[string]int64{}
	executions := map[string]bool{}
	first := map[string]time.Time{}
	s.mu.RLock()
	for _, r := range s.rows {
		if (q.TaskSessionID != "" && r.TaskSessionID != q.TaskSessionID) || (q.TaskID != "" && r.TaskID != q.TaskID) {
			continue
		}
		st.Subagents++
		if r.Source == core.SourceBackfill {
			st.Backfill++
		} else {
			st.Live++
		}
		if r.TurnID == nil {
			st.RowsWithoutTurn++
		} else {
			perTurn[*r.TurnID]++
		}
		if r.AgentExecutionID == core.UnknownExecution {
			st.UnknownExecutionRows++
		} else {
			executions[r.AgentExecutionID] = true
		}
		if !add(&st.TotalTokens, r.TotalTokens) || !add(&st.ToolUseCount, r.ToolUseCount) || !add(&st.DurationMs, r.DurationMs) {
			s.mu.RUnlock()
			return core.Stats{}, &core.OpError{Op: "stats", Err: errors.New("a metric's sum does not fit in 64 bits")}
		}
		if f, ok := first[r.TaskSessionID]; !ok || r.ObservedAt.Before(f) {
			first[r.TaskSessionID] = r.ObservedAt
		}
	}
	s.mu.RUnlock()
	st.DistinctExecutions = int64(len(executions))
	for _, m := range []*core.Metric{&st.TotalTokens, &st.ToolUseCount, &st.DurationMs} {
		m.Unreported = st.Subagents - m.Reported
		if m.Reported > 0 {
			avg := float64(m.Sum) / float64(m.Reported)
			m.Average = &avg
		}
	}
	hist := map[int64]int64{}
	for _, n := range perTurn {
		hist[n]++
	}
	for n, turns := range hist {
		st.FanOutPerTurn = append(st.FanOutPerTurn, core.FanOut{Subagents: n, Turns: turns})
	}
	slices.SortFunc(st.FanOutPerTurn, func(a, b core.FanOut) int { return int(a.Subagents - b.Subagents) })
	if q.TaskSessionID != "" {
		if _, ok := first[q.TaskSessionID]; !ok {
			first[q.TaskSessionID] = time.Time{}
		}
	}
	ids := make([]string, 0, len(first))
	for id := range first {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		var t *time.Time
		if f := first[id]; !f.IsZero() {
			t = &f
		}
		c := core.CoverageOf(a, id, t)
		if c.Coverage == core.Known {
			st.KnownSessions++
		} else {
			st.UnknownSessions++
		}
		if q != (core.StatsQuery{}) {
			st.Sessions = append(st.Sessions, c)
		}
	}
	return st, nil
}

// add counts a reported value; false when the sum overflows 64 bits (the
// SQL adapters fail the same way).
func add(m *core.Metric, v *int64) bool {
	if v == nil {
		return true
	}
	m.Reported++
	if *v > math.MaxInt64-m.Sum {
		return false
	}
	m.Sum += *v
	return true
}
