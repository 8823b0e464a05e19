package core

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// FailureLister lists a window's failed subagents, newest first, by key
// (docs/CONTRACT.md §5.4): the SQL stores and the memory store implement
// it.
type FailureLister interface {
	Failures(ctx context.Context, q FailureQuery) ([]Subagent, error)
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

// The failures' bound on one page.
const (
	DefaultFailures = 20
	MaxFailures     = 1000
)

// KeyOf is a row's place in the failures' list.
func KeyOf(r Subagent) FailureKey {
	return FailureKey{CanonicalTime(r.ObservedAt), r.TaskSessionID, r.ToolCallID, r.AgentExecutionID}
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

// compareFailures orders the list: newest first, then session, tool call
// id and execution id, each descending byte by byte.
func compareFailures(a, b FailureKey) int {
	if c := b.ObservedAt.Compare(a.ObservedAt); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(b.TaskSessionID, a.TaskSessionID), cmp.Compare(b.ToolCallID, a.ToolCallID),
		cmp.Compare(b.AgentExecutionID, a.AgentExecutionID))
}

// FailuresOf is the Go reference of a page of failures: what every
// store's Failures must return for the same rows.
func FailuresOf(rows []Subagent, q FailureQuery) []Subagent {
	out := []Subagent{} // an empty page is empty, not nil: the stores' answer
	for _, r := range rows {
		r = r.Canonical()
		if r.ToolStatus == nil || !IsFailedToolStatus(*r.ToolStatus) || !inWindow(r.ObservedAt, q.Since, q.Until) {
			continue
		}
		if q.After != nil {
			after := *q.After
			after.ObservedAt = CeilMicro(after.ObservedAt)
			if compareFailures(KeyOf(r), after) <= 0 {
				continue
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Subagent) int { return compareFailures(KeyOf(a), KeyOf(b)) })
	return out[:min(len(out), q.LimitOrDefault())]
}
