package storekit

import (
	"errors"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/canon"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// This file is the one place where the contract's merge rules are written:
// how an incoming row merges into a stored one (Merge, over the rules
// declared in Columns), how history meets live capture at the seam
// (Absorbs, MergeHistory, Absorbed, Write), and what a row must be to be stored
// (Validate). The SQL stores express Merge inside their ON CONFLICT
// clause; the conformance suite checks them against this file.

// ColumnNamed returns the declared column of that name; it panics for a
// name Columns does not declare (a programming error).
func ColumnNamed(name string) *Column { return &columns[ColumnIndex(name)] }

// ColumnIndex is the position in Columns of the column of that name; it
// panics for a name Columns does not declare (a programming error).
func ColumnIndex(name string) int {
	for i := range columns {
		if columns[i].Name == name {
			return i
		}
	}
	panic("storekit: no column named " + name)
}

// Merge is the reference semantics of the upsert: the row that results when
// incoming is written over stored (nil when no row has the key yet). Both
// rows are normalised rows with the same key. Each column follows its
// declared Rule (AC-1 … AC-12). Every adapter must produce what Merge
// produces, except for UpdatedAt (the adapter's clock) and ID (assigned
// once, on insert).
func Merge(stored *core.Subagent, incoming core.Subagent) core.Subagent {
	if stored == nil {
		// AC-1: the first frame creates the row with its source and
		// observation time.
		if incoming.Source == "" {
			incoming.Source = core.SourceLive
		}
		return incoming
	}
	out := *stored
	MergeInto(&out, &incoming)
	return out
}

// MergeInto is Merge in place: incoming written over *stored, a row with
// the same key. AC-3: same key ⇒ the same row; each column takes the
// incoming value where its declared Rule says so, and keeps the stored one
// otherwise.
func MergeInto(stored, incoming *core.Subagent) {
	settled := stored.SettledAt != nil
	reopened, keepStatus := reopens(stored, incoming), keepsEndedStatus(stored, incoming)
	for _, f := range mergedFields {
		take := f.col.Rule.TakesIncoming(Sides{
			StoredNull: f.null(stored), IncomingNull: f.null(incoming), Greater: f.greater(stored, incoming), Settled: settled,
		})
		switch f.col.Rule {
		case RuleEnd:
			take = take || reopened
		case RuleAgentStatus:
			take = take && !keepStatus
		}
		if take {
			f.take(stored, incoming)
		}
	}
}

// AgentStatusUnknown is the agent status of a subagent whose activity its
// host can no longer observe (a lost connection; ACP's unknown state): not
// an end, not an outcome (docs/CONTRACT.md §3.4).
const AgentStatusUnknown = "unknown"

// keepsEndedStatus reports whether stored keeps its agent status against
// incoming (RuleAgentStatus): incoming says AgentStatusUnknown and
// stored's agent has ended.
func keepsEndedStatus(stored, incoming *core.Subagent) bool {
	return stored.EndedAt != nil && incoming.AgentStatus != nil && *incoming.AgentStatus == AgentStatusUnknown
}

// reopens reports whether incoming reopens stored's ended agent (RuleEnd):
// it reports a start later than stored's end: the agent was woken again
// after it stopped, and the row takes the incoming end (NULL: running).
func reopens(stored, incoming *core.Subagent) bool {
	return stored.EndedAt != nil && incoming.StartedAt != nil && incoming.StartedAt.After(*stored.EndedAt)
}

// Where history meets live capture (docs/CONTRACT.md §8.5) a
// (task_session_id, tool_call_id) pair is one invocation: the row the
// backfill recovered for it under the 'unknown' execution and the frames
// recorded live under an execution id become one row, whatever came
// first. History counts as the first write: the row is what the live
// frames, merged by the ordinary rules, make of the row history gave.

// Absorbs reports whether live, a row just inserted live (its key had no
// row), absorbs history: the row the backfill wrote for the same session
// and tool call id, under the 'unknown' execution. The store then keeps
// one row, Absorbed(live, history), in the same atomic statement.
func Absorbs(live, history *core.Subagent) bool {
	return history.Source == core.SourceBackfill && history.AgentExecutionID == core.UnknownExecution &&
		live.AgentExecutionID != core.UnknownExecution &&
		history.TaskSessionID == live.TaskSessionID && history.ToolCallID == live.ToolCallID
}

// MergeHistory is the row that results when history (the row the
// backfill recovers, or recovered, for a pair) meets live, a row that live
// frames wrote for that pair: history's row with live merged into it by
// the ordinary rules, as if history had been written first, keeping live's
// id, execution id and updated_at. So history gives the write-once
// columns (observed_at, task_id, source 'backfill') and the first-wins
// ones where it has them, live's values replace history's wherever live
// reported one, and history fills what live never said.
func MergeHistory(live, history core.Subagent) core.Subagent {
	out := history
	MergeInto(&out, &live)
	out.ID, out.AgentExecutionID, out.UpdatedAt = live.ID, live.AgentExecutionID, live.UpdatedAt
	return out
}

// Absorbed is the one row a pair keeps when live absorbs history
// (Absorbs): MergeHistory under history's id. History's row is moved to
// live's execution — it counts as the pair's first write, and an id is
// assigned once, on the first insert.
func Absorbed(live, history core.Subagent) core.Subagent {
	out := MergeHistory(live, history)
	out.ID = history.ID
	return out
}

// Write is the reference of a store's upsert over its rows, by key: the
// row merges into the stored row of its key (MergeInto), or is inserted,
// absorbing its pair's backfilled row if there is one (Absorbs). It returns
// the row as stored. The stores implement it atomically, each in its own
// way; the conformance suite and the differential tests compare them with
// it.
func Write(rows map[core.RowKey]core.Subagent, incoming core.Subagent) core.Subagent {
	key := incoming.Key()
	if stored, ok := rows[key]; ok {
		MergeInto(&stored, &incoming)
		rows[key] = stored
		return stored
	}
	row := Merge(nil, incoming)
	seam := key
	seam.AgentExecutionID = core.UnknownExecution
	if history, ok := rows[seam]; ok && Absorbs(&row, &history) {
		delete(rows, seam)
		row = Absorbed(row, history)
	}
	rows[key] = row
	return row
}

// CanonicalTime is the form in which every adapter stores a timestamp: UTC,
// truncated to the microsecond (docs/CONTRACT.md §2, AC-24e).
func CanonicalTime(t time.Time) time.Time { return canon.Time(t) }

// CeilMicro is t rounded up to the next whole microsecond (t itself when
// it has no finer digits). A stored time, which has none, is at or after t
// exactly when it is at or after CeilMicro(t) (docs/CONTRACT.md §8.7).
func CeilMicro(t time.Time) time.Time { return canon.CeilMicro(t) }

// Validate reports the first way in which a row cannot be stored, naming the
// column (docs/CONTRACT.md §2). Stores call it before any SQL runs, so bad
// input never reaches (or corrupts) what is already stored. An empty id is
// allowed: the store assigns one on insert.
func Validate(s *core.Subagent) error {
	for _, f := range checkedField {
		if err := f.check(f.col, s); err != nil {
			return fmt.Errorf("%w: %s %s", core.ErrInvalidRow, f.col.Name, err)
		}
	}
	if s.Source != core.SourceLive && s.Source != core.SourceBackfill {
		return fmt.Errorf("%w: source is %q, want %q or %q", core.ErrInvalidRow, s.Source, core.SourceLive,
			core.SourceBackfill)
	}
	return nil
}

// The reasons Validate gives, after the column's name.
var (
	errEmpty         = errors.New("is empty")
	errEmptyNullable = errors.New("is an empty string (store nil for NULL)")
	errNegative      = errors.New("is negative")
	errZeroTime      = errors.New("is zero (not set)")
)

// The instants every adapter stores and compares exactly: years 1-9999.
var (
	firstInstant = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	pastLast     = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// checkTime rejects an instant outside years 1-9999.
func checkTime(t time.Time) error {
	if t.Before(firstInstant) || !t.Before(pastLast) {
		return fmt.Errorf("%s is outside years 1-9999", t.UTC().Format(time.RFC3339))
	}
	return nil
}

// Sanitize makes descriptive text storable identically on every adapter:
// each NUL byte and each invalid UTF-8 sequence becomes U+FFFD (PostgreSQL
// rejects both in text); everything else is kept. Identifiers are never
// sanitized (two different ids must never become one): CheckIdentifier
// refuses them instead.
func Sanitize(s string) string { return canon.Sanitize(s) }

// MaxIDBytes bounds every identifier (docs/CONTRACT.md §8.3): three of them,
// the unique key, always fit one PostgreSQL B-tree entry, so a longer one is
// refused on every adapter alike.
const MaxIDBytes = 512

// CheckIdentifier reports why an identifier could not be stored exactly as
// given on every adapter, or nil.
func CheckIdentifier(id string) error { return canon.CheckIdentifier(id) }

// TerminalToolStatuses returns the tool statuses that settle a row (AC-11).
func TerminalToolStatuses() []string { return canon.TerminalToolStatuses() }

// FailedToolStatuses returns the tool statuses counted as failed
// (docs/CONTRACT.md §5.4).
func FailedToolStatuses() []string { return canon.FailedToolStatuses() }

// Prefix starts every error the library returns, once (docs/CONTRACT.md):
// a store's errors start with it too.
const Prefix = "subagentctx: "

// Errorf is fmt.Errorf for a store's errors: the message starts with Prefix
// once, whatever the errors it wraps say, and %w keeps them reachable for
// errors.Is and errors.As.
func Errorf(format string, args ...any) error { return liberr.Errorf(format, args...) }

// IsTerminalToolStatus reports whether an ACP tool status settles a row
// (AC-11); agent_status never does, whatever its value (AC-10a).
func IsTerminalToolStatus(status string) bool { return canon.IsTerminalToolStatus(status) }

// IsFailedToolStatus reports whether a tool status counts as failed
// (docs/CONTRACT.md §5.4).
func IsFailedToolStatus(status string) bool { return canon.IsFailedToolStatus(status) }

// FailedAgentStatuses returns the agent statuses counted as failed: a
// row fails when its tool status or its agent status is a failed one
// (docs/CONTRACT.md §5.4).
func FailedAgentStatuses() []string { return canon.FailedAgentStatuses() }

// Unended reports whether the row's agent may still end and has not: no
// end seen, and a background launch or a tool call not over
// (docs/CONTRACT.md §3.4).
func Unended(r *core.Subagent) bool { return r.EndedAt == nil && (r.IsAsync || r.SettledAt == nil) }

// Failed reports whether a row counts as failed (docs/CONTRACT.md §5.4).
func Failed(r *core.Subagent) bool { return canon.Failed(r.ToolStatus, r.AgentStatus) }
