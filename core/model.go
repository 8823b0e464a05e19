package core

import "time"

// Payload is the provider payload of a subagent frame. It decodes Kandev's
// SubagentTaskPayload JSON unchanged: description, prompt and subagent_type are
// always present; the other fields are omitted when empty or zero, except
// tool_use_count, which is a pointer so that a reported 0 survives (AC-8).
//
// Prompt, ResultText and OutputFile are decoded for compatibility but never
// stored: the record keeps structure, not content.
type Payload struct {
	Description       string `json:"description"`
	Prompt            string `json:"prompt"`
	SubagentType      string `json:"subagent_type"`
	Status            string `json:"status,omitempty"`
	AgentID           string `json:"agent_id,omitempty"`
	Model             string `json:"model,omitempty"`
	ChildSessionID    string `json:"child_session_id,omitempty"`
	DurationMs        int64  `json:"duration_ms,omitempty"`
	TotalTokens       int64  `json:"total_tokens,omitempty"`
	ToolUseCount      *int64 `json:"tool_use_count,omitempty"`
	IsAsync           bool   `json:"is_async,omitempty"`
	ResultText        string `json:"result_text,omitempty"`
	OutputFile        string `json:"output_file,omitempty"`
	CanReadOutputFile bool   `json:"can_read_output_file,omitempty"`
}

// Frame is one observed tool-call frame that the host recognised as a
// subagent task. Empty strings mean "not present"; Normalize decides what that
// implies for each column.
type Frame struct {
	TaskSessionID    string
	TaskID           string
	TurnID           string
	ExecutionID      string
	ToolCallID       string
	ParentToolCallID string
	// ToolStatus is the ACP status of the launching tool call, verbatim.
	ToolStatus string
	// ObservedAt is when the host observed this frame. Zero means "now" to
	// the Recorder.
	ObservedAt time.Time
	// Payload may be nil: the frame then carries identity and statuses only.
	Payload *Payload
}

// Source says how a row came to exist. It is write-once (AC-1a).
type Source string

const (
	// SourceLive marks a row first written by the live path (the default).
	SourceLive Source = "live"
	// SourceBackfill marks a row first written by the one-time backfill.
	SourceBackfill Source = "backfill"
)

// UnknownExecution is the sentinel stored in agent_execution_id when a frame
// carried no execution id (AC-31). It means "unrecorded", never "shared".
const UnknownExecution = "unknown"

// Key identifies a row: UNIQUE (task_session_id, agent_execution_id,
// tool_call_id), in that order. tool_call_id alone is unique only within one
// execution (AC-32).
type Key struct {
	TaskSessionID    string
	AgentExecutionID string
	ToolCallID       string
}

// Subagent is one row of task_session_subagents. Every nullable column is a
// pointer, so a reported 0 and "not reported" never collapse (AC-7, AC-8) and
// an empty string is never stored (it is NULL).
type Subagent struct {
	ID               string
	TaskSessionID    string
	TaskID           string
	TurnID           *string
	AgentExecutionID string
	ToolCallID       string
	ParentToolCallID *string
	SubagentType     *string
	Description      *string
	AgentID          *string
	ChildSessionID   *string
	Model            *string
	AgentStatus      *string
	ToolStatus       *string
	IsAsync          bool
	TotalTokens      *int64
	ToolUseCount     *int64
	DurationMs       *int64
	Source           Source
	// ObservedAt is the first observation of a recognisable frame; it is not
	// a start time (AC-1a).
	ObservedAt time.Time
	// SettledAt is the first observation of a terminal tool_status (AC-11).
	SettledAt *time.Time
	// UpdatedAt is the time of the last write.
	UpdatedAt time.Time
}

// Key returns the row's unique key.
func (s *Subagent) Key() Key {
	return Key{TaskSessionID: s.TaskSessionID, AgentExecutionID: s.AgentExecutionID, ToolCallID: s.ToolCallID}
}

// Clone returns a deep copy, so that a stored row and a caller's copy never
// share a pointer.
func (s Subagent) Clone() Subagent {
	s.TurnID = clonePtr(s.TurnID)
	s.ParentToolCallID = clonePtr(s.ParentToolCallID)
	s.SubagentType = clonePtr(s.SubagentType)
	s.Description = clonePtr(s.Description)
	s.AgentID = clonePtr(s.AgentID)
	s.ChildSessionID = clonePtr(s.ChildSessionID)
	s.Model = clonePtr(s.Model)
	s.AgentStatus = clonePtr(s.AgentStatus)
	s.ToolStatus = clonePtr(s.ToolStatus)
	s.TotalTokens = clonePtr(s.TotalTokens)
	s.ToolUseCount = clonePtr(s.ToolUseCount)
	s.DurationMs = clonePtr(s.DurationMs)
	s.SettledAt = clonePtr(s.SettledAt)
	return s
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
