// Package memory is an in-memory core.Store with the same semantics as the
// SQL adapters: it applies core.Merge directly. Use it in unit tests of a host
// application; it keeps nothing across restarts.
package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/subagentctx/subagentctx/core"
)

// Store is a concurrency-safe in-memory core.Store.
type Store struct {
	mu   sync.RWMutex
	rows map[core.Key]core.Subagent
	now  func() time.Time
}

var _ core.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{rows: make(map[core.Key]core.Subagent), now: time.Now}
}

// ContextBounded marks the store as one that returns promptly whatever its
// context (it does no I/O), so the Recorder calls it directly.
func (s *Store) ContextBounded() {}

// Upsert merges row into the stored row with the same key, atomically.
func (s *Store) Upsert(ctx context.Context, row core.Subagent) error {
	if err := ctx.Err(); err != nil {
		return &core.OpError{Op: "upsert", Key: row.Key(), Err: err}
	}
	if err := row.Validate(); err != nil {
		return &core.OpError{Op: "upsert", Key: row.Key(), Err: err}
	}
	row = row.Clone()
	row.ObservedAt = core.CanonicalTime(row.ObservedAt)
	if row.SettledAt != nil {
		t := core.CanonicalTime(*row.SettledAt)
		row.SettledAt = &t
	}
	row.UpdatedAt = core.CanonicalTime(s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	key := row.Key()
	if stored, ok := s.rows[key]; ok {
		s.rows[key] = core.Merge(&stored, row)
		return nil
	}
	if row.ID == "" {
		row.ID = uuid.NewString()
	}
	s.rows[key] = core.Merge(nil, row)
	return nil
}

// ListBySession returns a session's rows in AC-13 order.
func (s *Store) ListBySession(ctx context.Context, taskSessionID string, page core.Page) ([]core.Subagent, error) {
	return s.list(ctx, "list by session", page, func(r *core.Subagent) bool { return r.TaskSessionID == taskSessionID })
}

// ListByTurn returns a turn's rows in AC-13 order.
func (s *Store) ListByTurn(ctx context.Context, turnID string, page core.Page) ([]core.Subagent, error) {
	return s.list(ctx, "list by turn", page, func(r *core.Subagent) bool { return r.TurnID != nil && *r.TurnID == turnID })
}

// DeleteSession removes a session's rows, as the SQL adapters' foreign-key
// cascade does when the host deletes the session (AC-16).
func (s *Store) DeleteSession(ctx context.Context, taskSessionID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.rows {
		if k.TaskSessionID == taskSessionID {
			delete(s.rows, k)
		}
	}
	return nil
}

func (s *Store) list(ctx context.Context, op string, page core.Page, match func(*core.Subagent) bool) ([]core.Subagent, error) {
	if err := ctx.Err(); err != nil {
		return nil, &core.OpError{Op: op, Err: err}
	}
	if err := page.Validate(); err != nil {
		return nil, &core.OpError{Op: op, Err: err}
	}
	s.mu.RLock()
	out := make([]core.Subagent, 0)
	for _, r := range s.rows {
		if match(&r) && (page.After == nil || page.After.Less(r.Cursor())) {
			out = append(out, r.Clone())
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b core.Subagent) int {
		ca, cb := a.Cursor(), b.Cursor()
		switch {
		case ca.Less(cb):
			return -1
		case cb.Less(ca):
			return 1
		}
		return 0
	})
	if page.Limit > 0 && len(out) > page.Limit {
		out = out[:page.Limit]
	}
	return out, nil
}
