package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// This file is the one place where the contract's rules are written: how a
// Frame becomes a row (Normalize), how an incoming row merges into a stored
// one (Merge, over the rules declared in Columns) and what a row must be to
// be stored (Validate). The SQL stores express Merge inside their ON
// CONFLICT clause; the conformance suite checks them against this file.

// terminalToolStatuses is exactly the set of ACP tool statuses that settle a
// row (AC-11). It mirrors Kandev's isTerminalToolStatus; a test pins it.
var terminalToolStatuses = [...]string{"complete", "completed", "success", "error", "failed", "cancelled"}

// TerminalToolStatuses returns the statuses that settle a row (AC-11).
func TerminalToolStatuses() []string { return slices.Clone(terminalToolStatuses[:]) }

// IsTerminalToolStatus reports whether an ACP tool status settles a row
// (AC-11). agent_status never does, whatever its value (AC-10a).
func IsTerminalToolStatus(status string) bool {
	for _, t := range terminalToolStatuses {
		if status == t {
			return true
		}
	}
	return false
}

// failedToolStatuses are the terminal statuses that mean the invocation
// did not succeed: the overview counts them as failed (docs/CONTRACT.md
// §5.4).
var failedToolStatuses = [...]string{"error", "failed", "cancelled"}

// FailedToolStatuses returns the tool statuses counted as failed.
func FailedToolStatuses() []string { return slices.Clone(failedToolStatuses[:]) }

// IsFailedToolStatus reports whether a tool status counts as failed.
func IsFailedToolStatus(status string) bool { return slices.Contains(failedToolStatuses[:], status) }

// Verdict is what Normalize learned about a frame besides the row, so the
// Recorder can count it (AC-26).
type Verdict struct {
	// NoIdentity: the session id, task id or tool call id was empty, so no
	// row may be written (AC-2).
	NoIdentity bool
	// Anomalous: at least one metric was negative and was dropped (AC-9).
	Anomalous bool
	// UnknownExecution: the frame carried no execution id and the row uses
	// the 'unknown' sentinel (AC-30/31).
	UnknownExecution bool
}

// Normalize turns a frame into the row it asks to write (docs/CONTRACT.md
// §3.1). It is pure: the Recorder supplies the observation time and counts
// the verdict; the store assigns the id. ObservedAt is kept in UTC at
// microsecond precision, the precision every adapter stores.
func Normalize(f Frame) (Subagent, Verdict) {
	var v Verdict
	// AC-2: without all three identities nothing is written.
	if f.TaskSessionID == "" || f.TaskID == "" || f.ToolCallID == "" {
		v.NoIdentity = true
		return Subagent{}, v
	}
	observed := CanonicalTime(f.ObservedAt)
	a := new(arena) // backs every pointer of the row: one allocation
	row := Subagent{
		TaskSessionID: f.TaskSessionID,
		TaskID:        f.TaskID,
		ToolCallID:    f.ToolCallID,
		// AC-30/31: a non-empty execution id verbatim, else the sentinel.
		AgentExecutionID: f.ExecutionID,
		// '' ⇒ NULL for every nullable text column.
		TurnID:           a.nonEmpty(f.TurnID),
		ParentToolCallID: a.nonEmpty(Sanitize(f.ParentToolCallID)), // AC-6: nested rows are written like any other
		ToolStatus:       a.nonEmpty(Sanitize(f.ToolStatus)),
		Source:           SourceLive, // AC-1: the live path creates live rows
		ObservedAt:       observed,
	}
	if row.AgentExecutionID == "" {
		row.AgentExecutionID = UnknownExecution
		v.UnknownExecution = true
	}
	// AC-11: settled_at is the observation time of a terminal tool_status
	// (or of a frame the host knows settles its tool call, §7).
	if f.Settled || IsTerminalToolStatus(f.ToolStatus) {
		row.SettledAt = a.time(observed)
	}
	if p := f.Payload; p != nil {
		row.SubagentType = a.nonEmpty(Sanitize(p.SubagentType))
		row.Description = a.nonEmpty(Sanitize(p.Description))
		row.AgentID = a.nonEmpty(Sanitize(p.AgentID))
		row.ChildSessionID = a.nonEmpty(Sanitize(p.ChildSessionID))
		row.Model = a.nonEmpty(Sanitize(p.Model))
		// AC-10a: agent_status is stored verbatim and never settles anything.
		row.AgentStatus = a.nonEmpty(Sanitize(p.Status))
		row.IsAsync = p.IsAsync
		// AC-7/7a: total_tokens and duration_ms cannot say "reported zero":
		// 0 ⇒ NULL. AC-8: tool_use_count is a pointer; nil ⇒ NULL, 0 ⇒ 0.
		// AC-9: a negative metric ⇒ NULL for that field only, counted once.
		var neg [3]bool
		row.TotalTokens, neg[0] = a.metric(p.TotalTokens, floor.tokens)
		row.DurationMs, neg[1] = a.metric(p.DurationMs, floor.duration)
		if n := p.ToolUseCount; n != nil {
			row.ToolUseCount, neg[2] = a.metric(*n, floor.toolUses)
		}
		v.Anomalous = neg[0] || neg[1] || neg[2]
	}
	return row, v
}

// floor holds each metric's declared Min (Columns), read once.
var floor = struct{ tokens, duration, toolUses int64 }{
	ColumnNamed("total_tokens").Min, ColumnNamed("duration_ms").Min, ColumnNamed("tool_use_count").Min,
}

// ColumnNamed returns the declared column of that name; it panics for a
// name Columns does not declare (a programming error).
func ColumnNamed(name string) *Column {
	for i := range Columns {
		if Columns[i].Name == name {
			return &Columns[i]
		}
	}
	panic("core: no column named " + name)
}

// Merge is the reference semantics of the upsert: the row that results when
// incoming is written over stored (nil when no row has the key yet). Both
// rows are normalised rows with the same key. Each column follows its
// declared Rule (AC-1 … AC-12). Every adapter must produce what Merge
// produces, except for UpdatedAt (the adapter's clock) and ID (assigned
// once, on insert).
func Merge(stored *Subagent, incoming Subagent) Subagent {
	if stored == nil {
		// AC-1: the first frame creates the row with its source and
		// observation time.
		if incoming.Source == "" {
			incoming.Source = SourceLive
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
func MergeInto(stored, incoming *Subagent) {
	settled := stored.SettledAt != nil
	for _, f := range mergedFields {
		if f.col.Rule.TakesIncoming(f.null(stored), f.null(incoming), settled) {
			f.take(stored, incoming)
		}
	}
}

// Where history meets live capture (docs/CONTRACT.md §8.5) a
// (task_session_id, tool_call_id) pair is one invocation: the row the
// backfill recovered for it under the 'unknown' execution and the frames
// recorded live under an execution id become one row, whatever came
// first. History counts as the first write: the row is what the live
// frames, merged by the ordinary rules, make of the row history gave.

// Absorbs reports whether live, a row just inserted live (its key had no
// row), absorbs history: the row the backfill wrote for the same session
// and tool call id, under the 'unknown' execution. The store then replaces
// live with MergeHistory(live, history) and deletes history, in the same
// atomic statement.
func Absorbs(live, history *Subagent) bool {
	return history.Source == SourceBackfill && history.AgentExecutionID == UnknownExecution &&
		live.AgentExecutionID != UnknownExecution &&
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
func MergeHistory(live, history Subagent) Subagent {
	out := history
	MergeInto(&out, &live)
	out.ID, out.AgentExecutionID, out.UpdatedAt = live.ID, live.AgentExecutionID, live.UpdatedAt
	return out
}

// Write is the reference of a store's upsert over its rows, by key: the
// row merges into the stored row of its key (MergeInto), or is inserted,
// absorbing its pair's backfilled row if there is one (Absorbs). It returns
// the row as stored. The stores implement it atomically, each in its own
// way; the conformance suite and the differential tests compare them with
// it.
func Write(rows map[RowKey]Subagent, incoming Subagent) Subagent {
	key := incoming.Key()
	if stored, ok := rows[key]; ok {
		MergeInto(&stored, &incoming)
		rows[key] = stored
		return stored
	}
	row := Merge(nil, incoming)
	seam := RowKey{TaskSessionID: key.TaskSessionID, AgentExecutionID: UnknownExecution, ToolCallID: key.ToolCallID}
	if history, ok := rows[seam]; ok && Absorbs(&row, &history) {
		delete(rows, seam)
		row = MergeHistory(row, history)
	}
	rows[key] = row
	return row
}

// CanonicalTime is the form in which every adapter stores a timestamp: UTC,
// truncated to the microsecond (docs/CONTRACT.md §2, AC-24e).
func CanonicalTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// CeilMicro is t rounded up to the next whole microsecond (t itself when
// it has no finer digits). A stored time, which has none, is at or after t
// exactly when it is at or after CeilMicro(t) (docs/CONTRACT.md §8.7).
func CeilMicro(t time.Time) time.Time {
	c := CanonicalTime(t)
	if c.Equal(t) {
		return c
	}
	return c.Add(time.Microsecond)
}

// ErrInvalidRow is wrapped by Validate's errors.
var ErrInvalidRow = errors.New("invalid subagent row")

// Validate reports the first way in which a row cannot be stored, naming the
// column (docs/CONTRACT.md §2). Stores call it before any SQL runs, so bad
// input never reaches (or corrupts) what is already stored. An empty id is
// allowed: the store assigns one on insert.
func (s *Subagent) Validate() error {
	for _, f := range checkedField {
		if err := f.check(f.col, s); err != nil {
			return fmt.Errorf("%w: %s %s", ErrInvalidRow, f.col.Name, err)
		}
	}
	if s.Source != SourceLive && s.Source != SourceBackfill {
		return fmt.Errorf("%w: source is %q, want %q or %q", ErrInvalidRow, s.Source, SourceLive, SourceBackfill)
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
// PostgreSQL rejects NUL bytes and invalid UTF-8 in text, so each NUL byte
// and each invalid UTF-8 sequence becomes U+FFFD on every adapter. Control
// characters, quotes and other bytes are kept as they are. Identifiers are
// not sanitized (two different ids must never become one); Validate rejects
// them instead.
func Sanitize(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// MaxIDBytes bounds every identifier (docs/CONTRACT.md §8.3): three of them,
// the unique key, always fit one PostgreSQL B-tree entry, so a longer one is
// refused on every adapter alike.
const MaxIDBytes = 512

// CheckIdentifier reports why an identifier could not be stored exactly as
// given on every adapter, or nil.
func CheckIdentifier(id string) error {
	switch {
	case len(id) > MaxIDBytes:
		return fmt.Errorf("is %d bytes, longer than %d", len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return errors.New("is not valid UTF-8")
	case strings.ContainsRune(id, 0):
		return errors.New("contains a NUL byte")
	}
	return nil
}

// nonEmpty places a nullable text value: ” ⇒ NULL.
func (a *arena) nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return a.text(s)
}

// metric maps a reported metric to its column: at least min kept, below 0
// ⇒ NULL and anomalous (AC-9), 0 below min ⇒ NULL (AC-7a).
func (a *arena) metric(v, min int64) (*int64, bool) {
	switch {
	case v < 0:
		return nil, true
	case v < min:
		return nil, false
	}
	return a.int(v), false
}
