package report

import (
	"context"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// FailureLister lists a window's failed subagents, newest first, by key
// (docs/CONTRACT.md §5.4): the SQL stores and the memory store implement
// it.
type FailureLister interface {
	Failures(ctx context.Context, q FailureQuery) ([]core.Subagent, error)
}

// FailureQuery selects the failed rows (a tool status in
// FailedToolStatuses) observed in [Since, Until) (a zero bound open), the
// most recently observed first, after the key After, at most Limit.
type FailureQuery struct {
	Since, Until time.Time
	// Limit bounds the rows listed (0: DefaultFailures; at most
	// MaxFailures).
	Limit int
	// After is the last row of the previous page (nil: the first page).
	After *FailureKey
}

// FailureKey is a failed row's place in the list: its observation, then
// its session, tool call id and execution id, each compared byte by byte,
// all descending.
type FailureKey struct {
	ObservedAt                                  time.Time
	TaskSessionID, ToolCallID, AgentExecutionID string
}

// KeyOf is a row's place in the failures' list.
func KeyOf(r core.Subagent) FailureKey {
	return FailureKey{canon.Time(r.ObservedAt), r.TaskSessionID, r.ToolCallID, r.AgentExecutionID}
}

// Validate checks the query, naming what is wrong.
func (q FailureQuery) Validate() error {
	if q.Limit < 0 || q.Limit > MaxFailures {
		return fmt.Errorf("failures: a page of %d, want 0 (the default, %d) to %d", q.Limit, DefaultFailures,
			MaxFailures)
	}
	return validWindow("failures", q.Since, q.Until)
}

// LimitOrDefault is the query's bound on a page.
func (q FailureQuery) LimitOrDefault() int {
	if q.Limit == 0 {
		return DefaultFailures
	}
	return q.Limit
}
