// Package mapstore is a custom store written from the store-author SPI
// alone (core/storekit), in memory over a map: each write is
// storekit.Write under a lock, each read the Go reference the conformance
// suite compares every store with. Its test runs that suite unchanged.
//
// It shows what a store owes the contract; the library's own memory
// adapter (adapters/memory) is the one to use in a host's tests.
package mapstore

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Store keeps rows by key. The SQL stores' primary key, (session, id), is
// kept beside them, so that an id is never held by two rows of a session.
type Store struct {
	mu   sync.Mutex
	rows map[core.RowKey]core.Subagent
	ids  map[[2]string]core.RowKey
}

// The contract's whole surface: the store a host passes around, and every
// read the conformance suite asks of it.
var (
	_ core.Store           = (*Store)(nil)
	_ report.Reader        = (*Store)(nil)
	_ report.Overviewer    = (*Store)(nil)
	_ report.Timeliner     = (*Store)(nil)
	_ report.TurnLister    = (*Store)(nil)
	_ report.FailureLister = (*Store)(nil)
	_ report.Exporter      = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	return &Store{rows: map[core.RowKey]core.Subagent{}, ids: map[[2]string]core.RowKey{}}
}

// Upsert validates the row before anything is touched, then writes it as
// storekit.Write does: merged into its key's row, or inserted, absorbing
// its pair's backfilled row (docs/CONTRACT.md §8.5).
func (s *Store) Upsert(ctx context.Context, row core.Subagent) error {
	if err := ctx.Err(); err != nil {
		return &core.OpError{Op: "upsert", Key: row.Key(), Err: err}
	}
	row = storekit.Clone(row) // shares no pointer with the caller
	row.UpdatedAt = time.Now()
	storekit.Canonicalize(&row)
	if err := storekit.Validate(&row); err != nil {
		return &core.OpError{Op: "upsert", Key: row.Key(), Err: err}
	}
	key := row.Key()
	s.mu.Lock()
	defer s.mu.Unlock()
	seam := key
	seam.AgentExecutionID = core.UnknownExecution
	history, hadHistory := s.rows[seam]
	if _, ok := s.rows[key]; !ok {
		if row.ID == "" {
			row.ID = uuid.NewString()
		}
		// An id is taken unless its holder is the history this row absorbs
		// (the same invocation, its id carried over from another store).
		holder, taken := s.ids[[2]string{row.TaskSessionID, row.ID}]
		if taken && !(holder == seam && storekit.Absorbs(&row, &history)) {
			return &core.OpError{Op: "upsert", Key: key, Kind: core.ErrConstraint,
				Err: fmt.Errorf("id %q is already the id of tool call %q in this session", row.ID, holder.ToolCallID)}
		}
	}
	stored := storekit.Write(s.rows, row)
	if _, kept := s.rows[seam]; hadHistory && !kept {
		delete(s.ids, [2]string{history.TaskSessionID, history.ID}) // absorbed
	}
	s.ids[[2]string{stored.TaskSessionID, stored.ID}] = key
	return nil
}

// ListBySession returns a session's rows in AC-13 order.
func (s *Store) ListBySession(ctx context.Context, session string, page core.Page) ([]core.Subagent, error) {
	return s.list(ctx, "list by session", page, func(r core.Subagent) bool { return r.TaskSessionID == session })
}

// ListByTurn returns a turn's rows in AC-13 order.
func (s *Store) ListByTurn(ctx context.Context, turn string, page core.Page) ([]core.Subagent, error) {
	return s.list(ctx, "list by turn", page, func(r core.Subagent) bool { return r.TurnID != nil && *r.TurnID == turn })
}

func (s *Store) list(ctx context.Context, op string, page core.Page, match func(core.Subagent) bool) (
	[]core.Subagent, error) {
	if err := page.Validate(); err != nil {
		return nil, &core.OpError{Op: op, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &core.OpError{Op: op, Err: err}
	}
	var rows []core.Subagent
	for _, r := range s.snapshot() {
		if match(r) {
			rows = append(rows, r)
		}
	}
	return storekit.ListOf(rows, page), nil
}

// DeleteSession removes a session's rows, as a foreign key's cascade does
// when the host deletes the session (AC-16).
func (s *Store) DeleteSession(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.rows {
		if k.TaskSessionID == session {
			delete(s.rows, k)
			delete(s.ids, [2]string{session, r.ID})
		}
	}
	return nil
}

// snapshot copies every row, so that a read shares nothing with the store.
func (s *Store) snapshot() []core.Subagent {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := make([]core.Subagent, 0, len(s.rows))
	for _, r := range s.rows {
		rows = append(rows, storekit.Clone(r))
	}
	return rows
}

// Activation: a map has no meta table, so the store is never activated and
// no absence in it means anything (docs/CONTRACT.md §5.1).
func (s *Store) Activation(ctx context.Context) (report.Activation, error) {
	return storekit.NewActivation(nil), ctx.Err()
}

// Health does not run on a store that is never activated; it says why.
func (s *Store) Health(ctx context.Context, q report.HealthQuery) (report.Health, error) {
	if err := q.Validate(); err != nil {
		return report.Health{}, &core.OpError{Op: "health check", Err: err}
	}
	a, err := s.Activation(ctx)
	h := storekit.HealthPrecondition(a, q)
	return h, err
}

// Stats is the reference statistics over the rows.
func (s *Store) Stats(ctx context.Context, q report.StatsQuery) (report.Stats, error) {
	if err := q.Validate(); err != nil {
		return report.Stats{}, &core.OpError{Op: "stats", Err: err}
	}
	a, err := s.Activation(ctx)
	return storekit.StatsOf(s.snapshot(), a, q), err
}

// Sessions is the reference listing of the sessions on record.
func (s *Store) Sessions(ctx context.Context, q report.SessionQuery) ([]report.SessionSummary, error) {
	if err := q.Validate(); err != nil {
		return nil, &core.OpError{Op: "sessions", Err: err}
	}
	a, err := s.Activation(ctx)
	return storekit.SessionsOf(s.snapshot(), a, q), err
}

// Overview is the reference overview of a window.
func (s *Store) Overview(ctx context.Context, q report.OverviewQuery) (report.Overview, error) {
	if err := q.Validate(); err != nil {
		return report.Overview{}, &core.OpError{Op: "overview", Err: err}
	}
	return storekit.OverviewOf(s.snapshot(), q), ctx.Err()
}

// Timeline is the reference activity of a window over time.
func (s *Store) Timeline(ctx context.Context, q report.TimelineQuery) (report.Timeline, error) {
	if err := q.Validate(); err != nil {
		return report.Timeline{}, &core.OpError{Op: "timeline", Err: err}
	}
	return storekit.TimelineOf(s.snapshot(), q), ctx.Err()
}

// SessionTurns is the reference page of a session's turns.
func (s *Store) SessionTurns(ctx context.Context, q report.TurnQuery) (report.TurnPage, error) {
	if err := q.Validate(); err != nil {
		return report.TurnPage{}, &core.OpError{Op: "session turns", Err: err}
	}
	return storekit.TurnsOf(s.snapshot(), q), ctx.Err()
}

// Failures is the reference page of a window's failed subagents.
func (s *Store) Failures(ctx context.Context, q report.FailureQuery) ([]core.Subagent, error) {
	if err := q.Validate(); err != nil {
		return nil, &core.OpError{Op: "failures", Err: err}
	}
	return storekit.FailuresOf(s.snapshot(), q), ctx.Err()
}

// Stale is the reference list of the agents that never came back.
func (s *Store) Stale(ctx context.Context, q report.StaleQuery) ([]core.Subagent, error) {
	if err := q.Validate(); err != nil {
		return nil, &core.OpError{Op: "stale", Err: err}
	}
	return storekit.StaleOf(s.snapshot(), q), ctx.Err()
}

// Export yields the reference export of a window.
func (s *Store) Export(ctx context.Context, q report.ExportQuery) iter.Seq2[core.Subagent, error] {
	return func(yield func(core.Subagent, error) bool) {
		if err := q.Validate(); err != nil {
			yield(core.Subagent{}, &core.OpError{Op: "export", Err: err})
			return
		}
		for _, r := range storekit.ExportOf(s.snapshot(), q) {
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

// NextSince: a write is visible as soon as it is made, so the next window
// starts where this one ended, or now.
func (s *Store) NextSince(_ context.Context, q report.ExportQuery) (time.Time, error) {
	if err := q.Validate(); err != nil {
		return time.Time{}, &core.OpError{Op: "export", Err: err}
	}
	if now := storekit.CanonicalTime(time.Now()); q.Until.IsZero() || now.Before(q.Until) {
		return now, nil
	}
	return q.Until, nil
}
