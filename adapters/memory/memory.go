// Package memory is an in-memory core.Store with the same semantics as the
// SQL adapters: it applies storekit.Merge directly. Use it in a host's unit
// tests; it keeps nothing across restarts.
//
// Where it differs from the SQL stores, the difference is declared in
// Features (and tested by the conformance suite): it has no host sessions
// table, so any session id is accepted, and no meta table or messages, so
// it is never activated.
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Store is a concurrency-safe in-memory core.Store.
type Store struct {
	mu   sync.RWMutex
	rows map[core.RowKey]*core.Subagent
	ids  map[[2]string]core.RowKey // (session, id) → key: the SQL primary key
	now  func() time.Time
}

var (
	_ core.Store    = (*Store)(nil)
	_ report.Reader = (*Store)(nil)
)

// New returns an empty Store.
func New() *Store {
	return &Store{rows: make(map[core.RowKey]*core.Subagent), ids: make(map[[2]string]core.RowKey), now: time.Now}
}

// Synchronous marks the store as one that returns promptly whatever its
// context (it does no I/O): the Recorder writes to it on the caller's
// goroutine, so a host's unit test reads a row right after Record.
func (s *Store) Synchronous() {}

// Upsert merges row into the stored row with the same key, atomically. An
// id already held by another key of the same session is refused with
// core.ErrConstraint, as the SQL stores' primary key refuses it.
func (s *Store) Upsert(ctx context.Context, row core.Subagent) error {
	if err := ctx.Err(); err != nil {
		return &core.OpError{Op: "upsert", Key: row.Key(), Err: err}
	}
	// One heap copy of the row, validated, detached from the caller's
	// pointers and canonicalised in place, then stored or merged into the
	// stored row under the lock: the record path allocates once here.
	r := new(core.Subagent)
	*r = row
	r.UpdatedAt = s.now()
	if err := storekit.Validate(r); err != nil {
		return &core.OpError{Op: "upsert", Key: r.Key(), Err: err}
	}
	storekit.Detach(r)
	storekit.Canonicalize(r)
	key := r.Key()
	s.mu.Lock()
	defer s.mu.Unlock()
	if stored, ok := s.rows[key]; ok {
		storekit.MergeInto(stored, r)
		return nil
	}

	if r.ID == "" {
		r.ID = uuid.NewString()
	}
	// One invocation, one row at the seam (docs/CONTRACT.md §8.5): the
	// row the backfill wrote for this session and tool call id is merged
	// into the new row, as the history before it. Its id may be the
	// frame's own (the same invocation's row, imported from another
	// store); any other row holding the frame's id refuses it.
	seam := core.RowKey{
		TaskSessionID:    key.TaskSessionID,
		AgentExecutionID: core.UnknownExecution,
		ToolCallID:       key.ToolCallID,
	}
	history, absorbs := s.rows[seam]
	absorbs = absorbs && storekit.Absorbs(r, history)
	id := [2]string{r.TaskSessionID, r.ID}
	if holder, taken := s.ids[id]; taken && !(absorbs && holder == seam) {
		return &core.OpError{Op: "upsert", Key: key, Kind: core.ErrConstraint,
			Err: fmt.Errorf(
				"id %q is already the id of tool call %q (execution %q) in this session", r.ID, holder.ToolCallID,
				holder.AgentExecutionID,
			)}
	}
	if r.Source == "" {
		r.Source = core.SourceLive
	}
	if absorbs {
		delete(s.rows, seam)
		*r = storekit.Absorbed(*r, *history)
		storekit.Detach(r)
		id[1] = r.ID
	}
	s.ids[id] = key
	s.rows[key] = r
	return nil
}

// ListBySession returns a session's rows in AC-13 order.
func (s *Store) ListBySession(ctx context.Context, taskSessionID string, page core.Page) ([]core.Subagent, error) {
	return s.list(ctx, "list by session", page, func(r *core.Subagent) bool { return r.TaskSessionID == taskSessionID })
}

// ListByTurn returns a turn's rows in AC-13 order.
func (s *Store) ListByTurn(ctx context.Context, turnID string, page core.Page) ([]core.Subagent, error) {
	return s.list(
		ctx, "list by turn", page, func(r *core.Subagent) bool { return r.TurnID != nil && *r.TurnID == turnID },
	)
}

// DeleteSession removes a session's rows, as the SQL stores' foreign-key
// cascade does when the host deletes the session (AC-16).
func (s *Store) DeleteSession(ctx context.Context, taskSessionID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.rows {
		if k.TaskSessionID == taskSessionID {
			delete(s.rows, k)
			delete(s.ids, [2]string{taskSessionID, r.ID})
		}
	}
	return nil
}

func (s *Store) list(
	ctx context.Context, op string, page core.Page, match func(*core.Subagent) bool,
) ([]core.Subagent, error) {
	if err := ctx.Err(); err != nil {
		return nil, &core.OpError{Op: op, Err: err}
	}
	if err := page.Validate(); err != nil {
		return nil, &core.OpError{Op: op, Err: err}
	}
	s.mu.RLock()
	var rows []core.Subagent
	for _, r := range s.rows {
		if match(r) {
			rows = append(rows, storekit.Clone(*r))
		}
	}
	s.mu.RUnlock()
	out := storekit.ListOf(rows, page)
	return out, nil
}

// errNotActivated explains the memory store's read side.
var errNotActivated = errors.New("the memory store has no meta table and no host messages: it is never activated")
