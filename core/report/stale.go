package report

import (
	"context"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// StaleLister names the subagents that never came back (docs/CONTRACT.md
// §5.8): the SQL stores and the memory store implement it.
type StaleLister interface {
	Stale(ctx context.Context, q StaleQuery) ([]core.Subagent, error)
}

// StaleQuery selects the rows whose agent may still end and has not —
// ended_at NULL, and either a background launch or a tool call not yet
// settled (docs/CONTRACT.md §3.4) — observed at or after Since (zero: any
// time), since before Before: their start (started_at, else
// observed_at) is earlier. They are listed oldest first, then by session,
// tool call id and execution id, byte by byte, at most Limit.
type StaleQuery struct {
	Before time.Time
	// Since, when set, keeps only the rows observed at or after it: a
	// window's (the web view's), read through the observed_at index.
	Since time.Time
	// Limit bounds the rows listed (0: DefaultStale; at most MaxStale).
	Limit int
}

// Validate checks the query, naming what is wrong.
func (q StaleQuery) Validate() error {
	switch {
	case q.Before.IsZero():
		return fmt.Errorf("stale: no threshold (Before is zero)")
	case q.Limit < 0 || q.Limit > MaxStale:
		return fmt.Errorf("stale: a page of %d, want 0 (the default, %d) to %d", q.Limit, DefaultStale, MaxStale)
	}
	return nil
}

// LimitOrDefault is the query's bound on the rows listed.
func (q StaleQuery) LimitOrDefault() int {
	if q.Limit == 0 {
		return DefaultStale
	}
	return q.Limit
}

// Since is when the row's agent is known to have been running from: its
// reported start, else its first observation.
func Since(r core.Subagent) time.Time {
	if r.StartedAt != nil {
		return canon.Time(*r.StartedAt)
	}
	return canon.Time(r.ObservedAt)
}
