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
	c := new(cells)
	s.TurnID = c.text(0, s.TurnID)
	s.ParentToolCallID = c.text(1, s.ParentToolCallID)
	s.SubagentType = c.text(2, s.SubagentType)
	s.Description = c.text(3, s.Description)
	s.AgentID = c.text(4, s.AgentID)
	s.ChildSessionID = c.text(5, s.ChildSessionID)
	s.Model = c.text(6, s.Model)
	s.AgentStatus = c.text(7, s.AgentStatus)
	s.ToolStatus = c.text(8, s.ToolStatus)
	s.TotalTokens = c.num(0, s.TotalTokens)
	s.ToolUseCount = c.num(1, s.ToolUseCount)
	s.DurationMs = c.num(2, s.DurationMs)
	if s.SettledAt != nil {
		c.at = *s.SettledAt
		s.SettledAt = &c.at
	}
	return s
}

// cells holds the values a row's pointers point to, so that a row's
// nullable columns cost one allocation rather than one each (the record
// path is hot).
type cells struct {
	texts [9]string
	nums  [3]int64
	at    time.Time
}

func (c *cells) text(i int, p *string) *string {
	if p == nil {
		return nil
	}
	c.texts[i] = *p
	return &c.texts[i]
}

func (c *cells) num(i int, p *int64) *int64 {
	if p == nil {
		return nil
	}
	c.nums[i] = *p
	return &c.nums[i]
}
