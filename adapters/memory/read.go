package memory

import (
	"context"
	"iter"
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
	h := storekit.HealthPrecondition(a, q)
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
	return storekit.StatsOf(s.snapshot(), a, q), nil // never activated: every verdict is unknown
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

// Stale implements report.StaleLister over the rows in memory.
func (s *Store) Stale(ctx context.Context, q report.StaleQuery) ([]core.Subagent, error) {
	if err := q.Validate(); err != nil {
		return nil, &core.OpError{Op: "stale", Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &core.OpError{Op: "stale", Err: err}
	}
	return storekit.StaleOf(s.snapshot(), q), nil
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
		out := storekit.ExportOf(s.snapshot(), q)
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
