package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/internal/canon"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// Store keeps task_session_subagents. Implementations must be safe for
// concurrent use; a store author writes one with core/storekit and proves
// it with the conformance suite, core/storetest. A host's test double that
// does no I/O declares a method Synchronous() (no import needed): the
// Recorder then writes to it on the caller's goroutine, so that its rows
// are there when Record returns, as the memory adapter's are.
type Store interface {
	// Upsert writes one normalised row atomically with storekit.Merge's
	// semantics: one statement, no read-then-write (AC-14). A row with an
	// empty ID gets a fresh UUID on insert; the ID of an existing row never
	// changes.
	Upsert(ctx context.Context, row Subagent) error
	// ListBySession returns a session's rows in AC-13 order.
	ListBySession(ctx context.Context, taskSessionID string, page Page) ([]Subagent, error)
	// ListByTurn returns a turn's rows in AC-13 order.
	ListByTurn(ctx context.Context, turnID string, page Page) ([]Subagent, error)
}

// Page bounds a listing. The zero Page lists everything.
type Page struct {
	// Limit is the most rows returned; 0 means no limit.
	Limit int
	// After resumes a listing after the row with this cursor (keyset paging:
	// rows inserted meanwhile are neither skipped nor repeated, whatever
	// their id).
	After *Cursor
}

// Cursor is a position in AC-13 order: observed_at, tool_call_id,
// agent_execution_id, ascending. Never the id (AC-13).
type Cursor struct {
	ObservedAt       time.Time
	ToolCallID       string
	AgentExecutionID string
}

// Cursor returns the position of this row, for Page.After.
func (s *Subagent) Cursor() Cursor {
	return Cursor{ObservedAt: s.ObservedAt, ToolCallID: s.ToolCallID, AgentExecutionID: s.AgentExecutionID}
}

// Canonical returns the cursor as every adapter compares it: its time in
// UTC at microsecond precision. Stored times have no finer digits, so a
// cursor between two microseconds stands just before the next one: it
// becomes (that microsecond, "", ""), which sorts before every row there
// (a row's tool call id is never empty) and after every earlier row.
func (a Cursor) Canonical() Cursor {
	t := canon.CeilMicro(a.ObservedAt)
	if t.Equal(a.ObservedAt) {
		a.ObservedAt = t
		return a
	}
	return Cursor{ObservedAt: t}
}

// Less reports whether a sorts before b in AC-13 order, text compared byte
// by byte.
func (a Cursor) Less(b Cursor) bool {
	if !a.ObservedAt.Equal(b.ObservedAt) {
		return a.ObservedAt.Before(b.ObservedAt)
	}
	if a.ToolCallID != b.ToolCallID {
		return a.ToolCallID < b.ToolCallID
	}
	return a.AgentExecutionID < b.AgentExecutionID
}

// Validate rejects a negative limit.
func (p Page) Validate() error {
	if p.Limit < 0 {
		return fmt.Errorf("page limit is %d: want 0 (no limit) or more", p.Limit)
	}
	return nil
}

// Kinds of store failure, for errors.Is: a failing Store operation's error
// matches at most one of them (an *OpError for the first two).
var (
	// ErrConstraint: the database refused the row, for example because its
	// session does not exist in the host's sessions table. Retrying the same
	// row will fail again.
	ErrConstraint = errors.New("constraint violation")
	// ErrUnavailable: the database could not be reached or the connection
	// broke. The same write may succeed later.
	ErrUnavailable = errors.New("database unavailable")
	// ErrInvalidRow: a store refused the row before any SQL ran
	// (storekit.Validate names the column: a bad identifier, an empty
	// required column, a time outside years 1-9999). Nothing was written.
	ErrInvalidRow = errors.New("invalid subagent row")
)

// OpError is the error a Store returns: which operation, on which key, and
// why. It unwraps to its Kind (when known) and to the driver's error.
type OpError struct {
	Op   string // "upsert", "list by session", …
	Key  RowKey // the row's key, for writes
	Kind error  // ErrConstraint, ErrUnavailable or nil
	Err  error  // the underlying error
}

func (e *OpError) Error() string {
	if e == nil {
		return "<nil>"
	}
	where := ""
	if e.Key != (RowKey{}) {
		where = fmt.Sprintf(" (task_session_id=%q agent_execution_id=%q tool_call_id=%q)",
			e.Key.TaskSessionID, e.Key.AgentExecutionID, e.Key.ToolCallID)
	}
	kind := ""
	if e.Kind != nil {
		kind = e.Kind.Error() + ": "
	}
	return liberr.Prefix + e.Op + where + ": " + kind + liberr.Unprefixed(e.Err)
}

// Unwrap exposes both the kind and the driver error to errors.Is/As.
func (e *OpError) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// PruneResult is what a prune did (docs/CONTRACT.md §8.14).
type PruneResult struct {
	// Boundary is the retention boundary in force afterwards: the time
	// asked for, or a later one an earlier prune recorded.
	Boundary time.Time `json:"boundary"`
	// Advanced: this prune moved the boundary.
	Advanced bool `json:"advanced"`
	// Deleted rows, last written before the boundary.
	Deleted int64 `json:"deleted"`
}

// TerminalToolStatuses returns the tool statuses that settle a row
// (AC-11), for a host that pins its own against them.
func TerminalToolStatuses() []string { return canon.TerminalToolStatuses() }
