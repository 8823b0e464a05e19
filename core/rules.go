package core

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// This file is the one place where the contract's rules are written: how a
// Frame becomes a row (Normalize) and how an incoming row merges into a stored
// one (Merge). The SQL adapters express Merge inside their ON CONFLICT clause;
// the conformance suite checks them against this function.

// TerminalToolStatuses is exactly the set of ACP tool statuses that settle a
// row (AC-11). It mirrors Kandev's isTerminalToolStatus; a test pins it.
var TerminalToolStatuses = []string{"complete", "completed", "success", "error", "failed", "cancelled"}

// IsTerminalToolStatus reports whether an ACP tool status settles a row
// (AC-11). agent_status never does, whatever its value (AC-10a).
func IsTerminalToolStatus(status string) bool {
	switch status {
	case "complete", "completed", "success", "error", "failed", "cancelled":
		return true
	}
	return false
}

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

// Normalize turns a frame into the row it asks to write. It is pure: the
// Recorder supplies the observation time and the row id, and counts the
// verdict. ObservedAt is kept in UTC at microsecond precision, the precision
// every adapter stores (SPEC §2).
func Normalize(f Frame) (Subagent, Verdict) {
	var v Verdict
	// AC-2: without all three identities nothing is written.
	if f.TaskSessionID == "" || f.TaskID == "" || f.ToolCallID == "" {
		v.NoIdentity = true
		return Subagent{}, v
	}
	observed := CanonicalTime(f.ObservedAt)
	c := new(cells) // backs every pointer of the row: one allocation
	row := Subagent{
		TaskSessionID: f.TaskSessionID,
		TaskID:        f.TaskID,
		ToolCallID:    f.ToolCallID,
		// AC-30/31: a non-empty execution id verbatim, else the sentinel.
		AgentExecutionID: f.ExecutionID,
		// SPEC §2: '' ⇒ NULL for every nullable text column.
		TurnID:           c.value(0, f.TurnID),
		ParentToolCallID: c.value(1, Sanitize(f.ParentToolCallID)), // AC-6: nested rows are written like any other
		ToolStatus:       c.value(8, Sanitize(f.ToolStatus)),
		Source:           SourceLive, // AC-1: the live path creates live rows
		ObservedAt:       observed,
	}
	if row.AgentExecutionID == "" {
		row.AgentExecutionID = UnknownExecution
		v.UnknownExecution = true
	}
	// AC-11: settled_at is the observation time of a terminal tool_status.
	if IsTerminalToolStatus(f.ToolStatus) {
		c.at = observed
		row.SettledAt = &c.at
	}
	if p := f.Payload; p != nil {
		row.SubagentType = c.value(2, Sanitize(p.SubagentType))
		row.Description = c.value(3, Sanitize(p.Description))
		row.AgentID = c.value(4, Sanitize(p.AgentID))
		row.ChildSessionID = c.value(5, Sanitize(p.ChildSessionID))
		row.Model = c.value(6, Sanitize(p.Model))
		// AC-10a: agent_status is stored verbatim and never settles anything.
		row.AgentStatus = c.value(7, Sanitize(p.Status))
		row.IsAsync = p.IsAsync
		// AC-7/7a: total_tokens and duration_ms cannot say "reported zero":
		// 0 ⇒ NULL. AC-8: tool_use_count is a pointer; nil ⇒ NULL, 0 ⇒ 0.
		// AC-9: a negative metric ⇒ NULL for that field only, counted once.
		var neg bool
		row.TotalTokens, neg = c.positive(0, p.TotalTokens)
		v.Anomalous = v.Anomalous || neg
		row.DurationMs, neg = c.positive(2, p.DurationMs)
		v.Anomalous = v.Anomalous || neg
		if n := p.ToolUseCount; n != nil {
			if *n < 0 {
				v.Anomalous = true
			} else {
				row.ToolUseCount = c.num(1, n)
			}
		}
	}
	return row, v
}

// Merge is the reference semantics of the upsert: the row that results when
// incoming is written over stored (nil when no row has the key yet). Both
// rows are normalised rows with the same Key. Every adapter must produce what
// Merge produces, except for UpdatedAt (the adapter's clock) and ID (assigned
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
	// AC-3: same key ⇒ the same row. Start from the stored row, so the
	// write-once columns stay as they are (AC-1a): id, source, observed_at,
	// task_id, agent_execution_id (and the key), even over a backfilled row.
	out := *stored
	out.UpdatedAt = incoming.UpdatedAt

	// AC-2a: the first non-empty turn wins; a stored NULL turn is filled.
	if out.TurnID == nil {
		out.TurnID = incoming.TurnID
	}
	// AC-4/AC-5: a non-empty incoming value replaces the stored one; an
	// absent one never blanks it. Normalize has already turned '' into nil,
	// 0 tokens/duration into nil (AC-7a) and negative metrics into nil (AC-9).
	fill(&out.ParentToolCallID, incoming.ParentToolCallID)
	fill(&out.SubagentType, incoming.SubagentType)
	fill(&out.Description, incoming.Description)
	fill(&out.AgentID, incoming.AgentID)
	fill(&out.ChildSessionID, incoming.ChildSessionID)
	fill(&out.Model, incoming.Model) // AC-12: still recorded after settling
	fill(&out.AgentStatus, incoming.AgentStatus)
	fill(&out.TotalTokens, incoming.TotalTokens)
	fill(&out.ToolUseCount, incoming.ToolUseCount)
	fill(&out.DurationMs, incoming.DurationMs)

	// AC-11/AC-12: once settled, settled_at and tool_status are frozen.
	// AC-10: until then tool_status follows AC-4/AC-5.
	if out.SettledAt == nil {
		fill(&out.ToolStatus, incoming.ToolStatus)
		out.SettledAt = incoming.SettledAt
	}
	// is_async is sticky: once 1, never back to 0.
	out.IsAsync = out.IsAsync || incoming.IsAsync
	return out
}

// CanonicalTime is the form in which every adapter stores a timestamp: UTC,
// truncated to the microsecond (SPEC §2, AC-24e).
func CanonicalTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// ErrInvalidRow is wrapped by Validate's errors.
var ErrInvalidRow = errors.New("invalid subagent row")

// Validate reports the first way in which a row cannot be stored, naming the
// field. Stores call it before any SQL runs, so bad input never reaches (or
// corrupts) what is already stored.
func (s *Subagent) Validate() error {
	bad := func(field, why string) error {
		return fmt.Errorf("%w: %s %s", ErrInvalidRow, field, why)
	}
	switch {
	case s.TaskSessionID == "":
		return bad("task_session_id", "is empty")
	case s.TaskID == "":
		return bad("task_id", "is empty")
	case s.ToolCallID == "":
		return bad("tool_call_id", "is empty")
	case s.AgentExecutionID == "":
		return bad("agent_execution_id", "is empty (use core.UnknownExecution)")
	case s.ObservedAt.IsZero():
		return bad("observed_at", "is zero")
	case s.Source != SourceLive && s.Source != SourceBackfill:
		return bad("source", fmt.Sprintf("is %q, want %q or %q", s.Source, SourceLive, SourceBackfill))
	}
	for _, id := range []struct{ field, v string }{
		{"task_session_id", s.TaskSessionID}, {"task_id", s.TaskID}, {"agent_execution_id", s.AgentExecutionID},
		{"tool_call_id", s.ToolCallID}, {"turn_id", deref(s.TurnID)}, {"parent_tool_call_id", deref(s.ParentToolCallID)},
	} {
		if err := checkID(id.field, id.v); err != nil {
			return err
		}
	}
	if err := checkTime("observed_at", s.ObservedAt); err != nil {
		return err
	}
	if s.SettledAt != nil {
		if err := checkTime("settled_at", *s.SettledAt); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		name string
		v    *int64
	}{{"total_tokens", s.TotalTokens}, {"tool_use_count", s.ToolUseCount}, {"duration_ms", s.DurationMs}} {
		if m.v != nil && *m.v < 0 {
			return bad(m.name, "is negative")
		}
	}
	for _, t := range []struct {
		name string
		v    *string
	}{
		{"turn_id", s.TurnID}, {"parent_tool_call_id", s.ParentToolCallID}, {"subagent_type", s.SubagentType},
		{"description", s.Description}, {"agent_id", s.AgentID}, {"child_session_id", s.ChildSessionID},
		{"model", s.Model}, {"agent_status", s.AgentStatus}, {"tool_status", s.ToolStatus},
	} {
		if t.v != nil && *t.v == "" {
			return bad(t.name, "is an empty string (store nil for NULL)")
		}
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

// MaxIDBytes bounds every identifier: PostgreSQL cannot index much longer
// values, so a longer one is rejected on every adapter alike.
const MaxIDBytes = 1024

// checkID rejects an identifier that no adapter could store as given.
func checkID(field, id string) error {
	switch {
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: %s is %d bytes, longer than %d", ErrInvalidRow, field, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidRow, field)
	case strings.ContainsRune(id, 0):
		return fmt.Errorf("%w: %s contains a NUL byte", ErrInvalidRow, field)
	}
	return nil
}

// checkTime rejects an instant outside years 1-9999, the range every
// adapter stores and compares exactly.
func checkTime(field string, t time.Time) error {
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return fmt.Errorf("%w: %s %s is outside years 1-9999", ErrInvalidRow, field, t.UTC().Format(time.RFC3339))
	}
	return nil
}

// value is a nullable text column: ” ⇒ NULL.
func (c *cells) value(i int, s string) *string {
	if s == "" {
		return nil
	}
	c.texts[i] = s
	return &c.texts[i]
}

// positive maps a plain metric to its column: >0 kept, 0 ⇒ NULL (AC-7a),
// <0 ⇒ NULL and anomalous (AC-9).
func (c *cells) positive(i int, v int64) (*int64, bool) {
	switch {
	case v > 0:
		c.nums[i] = v
		return &c.nums[i], false
	case v < 0:
		return nil, true
	}
	return nil, false
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func fill[T any](dst **T, v *T) {
	if v != nil {
		*dst = v
	}
}
