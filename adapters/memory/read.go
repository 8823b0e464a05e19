package memory

import (
	"context"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Activation reports an unactivated store: the memory adapter has no meta
// table, so no absence in it means anything (docs/CONTRACT.md §5.1).
func (s *Store) Activation(ctx context.Context) (report.Activation, error) {
	return storekit.NewActivation(nil), ctx.Err()
}

// Health does not run on the memory adapter; the report says why.
func (s *Store) Health(ctx context.Context, q report.HealthQuery) (report.Health, error) {
	if err := q.Validate(); err != nil {
		return report.Health{}, &core.OpError{Op: "health check", Err: err}
	}
	a, err := s.Activation(ctx)
	h, _, _ := storekit.HealthPrecondition(a, q)
	h.Reason += " (" + errNotActivated.Error() + ")"
	return h, err
}

// Stats computes the same statistics as the SQL stores, over the rows in
// memory, in the not_activated state: every session's coverage is unknown
// and distinct executions are not reported.
func (s *Store) Stats(ctx context.Context, q report.StatsQuery) (report.Stats, error) {
	if err := q.Validate(); err != nil {
		return report.Stats{}, &core.OpError{Op: "stats", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return report.Stats{}, err
	}
	st := report.Stats{Query: q, Activation: a, FanOutPerTurn: []report.FanOut{}}
	perTurn := map[[2]string]int64{} // a turn within its session (docs/CONTRACT.md §5.3)
	first := map[string]*time.Time{}
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
			perTurn[[2]string{r.TaskSessionID, *r.TurnID}]++
		}
		if r.AgentExecutionID == core.UnknownExecution {
			st.UnknownExecutionRows++
		}
		st.TotalTokens.Add(r.Source, r.TotalTokens)
		st.ToolUseCount.Add(r.Source, r.ToolUseCount)
		st.DurationMs.Add(r.Source, r.DurationMs)
		if f := first[r.TaskSessionID]; f == nil || r.ObservedAt.Before(*f) {
			t := r.ObservedAt
			first[r.TaskSessionID] = &t
		}
	}
	s.mu.RUnlock()
	for _, m := range st.Metrics() {
		m.Stats.Finish()
	}
	hist := map[int64]int64{}
	for _, n := range perTurn {
		hist[n]++
	}
	for n, turns := range hist {
		st.FanOutPerTurn = append(st.FanOutPerTurn, report.FanOut{Subagents: n, Turns: turns})
	}
	slices.SortFunc(st.FanOutPerTurn, func(a, b report.FanOut) int { return int(a.Subagents - b.Subagents) })
	storekit.AddCoverage(&st, first) // never activated: every verdict is unknown
	return st, nil
}

// Sessions implements report.Reader over the rows in memory, with the SQL
// stores' order; every coverage is unknown (never activated).
func (s *Store) Sessions(ctx context.Context, q report.SessionQuery) ([]report.SessionSummary, error) {
	if err := q.Validate(); err != nil {
		return nil, &core.OpError{Op: "sessions", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return nil, err
	}
	return storekit.SessionsOf(s.snapshot(), a, q), nil
}

// Overview implements report.Overviewer: the reference, over the rows in
// memory at the stores' microsecond.
func (s *Store) Overview(ctx context.Context, q report.OverviewQuery) (report.Overview, error) {
	if err := q.Validate(); err != nil {
		return report.Overview{}, &core.OpError{Op: "overview", Err: err}
	}
	if err := ctx.Err(); err != nil {
		return report.Overview{}, &core.OpError{Op: "overview", Err: err}
	}
	return storekit.OverviewOf(s.snapshot(), q), nil
}

// Failures implements report.FailureLister over the rows in memory.
func (s *Store) Failures(ctx context.Context, q report.FailureQuery) ([]core.Subagent, error) {
	if err := q.Validate(); err != nil {
		return nil, &core.OpError{Op: "failures", Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &core.OpError{Op: "failures", Err: err}
	}
	return storekit.FailuresOf(s.snapshot(), q), nil
}

// Timeline implements report.Timeliner over the rows in memory.
func (s *Store) Timeline(ctx context.Context, q report.TimelineQuery) (report.Timeline, error) {
	if err := q.Validate(); err != nil {
		return report.Timeline{}, &core.OpError{Op: "timeline", Err: err}
	}
	if err := ctx.Err(); err != nil {
		return report.Timeline{}, &core.OpError{Op: "timeline", Err: err}
	}
	return storekit.TimelineOf(s.snapshot(), q), nil
}

// NextSince implements report.Exporter: a write is visible as soon as it
// is made, so the next window starts at Until, or now.
func (s *Store) NextSince(_ context.Context, q report.ExportQuery) (time.Time, error) {
	if err := q.Validate(); err != nil {
		return time.Time{}, &core.OpError{Op: "export", Err: err}
	}
	if now := storekit.CanonicalTime(s.now()); q.Until.IsZero() || now.Before(q.Until) {
		return now, nil
	}
	return q.Until, nil
}

// Export implements report.Exporter over the rows in memory, in the SQL
// stores' order: session, then id, byte by byte.
func (s *Store) Export(ctx context.Context, q report.ExportQuery) iter.Seq2[core.Subagent, error] {
	return func(yield func(core.Subagent, error) bool) {
		if err := q.Validate(); err != nil {
			yield(core.Subagent{}, &core.OpError{Op: "export", Err: err})
			return
		}
		since, until := storekit.CeilMicro(q.Since), storekit.CeilMicro(q.Until)
		s.mu.RLock()
		var out []core.Subagent
		for _, r := range s.rows {
			c := storekit.Canonical(*r) // times at the stores' microsecond
			k := report.ExportKey{TaskSessionID: c.TaskSessionID, ID: c.ID}
			switch {
			case !q.Since.IsZero() && c.UpdatedAt.Before(since),
				!q.Until.IsZero() && !c.UpdatedAt.Before(until),
				q.After != nil && exportCompare(k, *q.After) <= 0:
				continue
			}
			out = append(out, c)
		}
		s.mu.RUnlock()
		slices.SortFunc(out, func(a, b core.Subagent) int {
			return exportCompare(report.ExportKey{TaskSessionID: a.TaskSessionID, ID: a.ID},
				report.ExportKey{TaskSessionID: b.TaskSessionID, ID: b.ID})
		})
		for _, r := range out {
			if err := ctx.Err(); err != nil {
				yield(core.Subagent{}, &core.OpError{Op: "export", Err: err})
				return
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// exportCompare orders export keys: session, then id, byte by byte.
func exportCompare(a, b report.ExportKey) int {
	if c := strings.Compare(a.TaskSessionID, b.TaskSessionID); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// snapshot is a copy of every row, its times at the stores' microsecond.
func (s *Store) snapshot() []core.Subagent {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rows := make([]core.Subagent, 0, len(s.rows))
	for _, r := range s.rows {
		rows = append(rows, storekit.Canonical(*r))
	}
	return rows
}

// SessionTurns implements report.TurnLister over the rows in memory.
func (s *Store) SessionTurns(ctx context.Context, q report.TurnQuery) (report.TurnPage, error) {
	if err := q.Validate(); err != nil {
		return report.TurnPage{}, &core.OpError{Op: "session turns", Err: err}
	}
	if err := ctx.Err(); err != nil {
		return report.TurnPage{}, &core.OpError{Op: "session turns", Err: err}
	}
	return storekit.TurnsOf(s.snapshot(), q), nil
}
