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

// The agent statuses of a tool call that returned while its subagent runs
// on: Claude Code's background and remote launches.
const (
	statusAsyncLaunched  = "async_launched"
	statusRemoteLaunched = "remote_launched"
)

// background reports whether the payload says its subagent runs on after
// its tool call returned.
func (p *Payload) background() bool {
	return p.IsAsync || p.Status == statusAsyncLaunched || p.Status == statusRemoteLaunched
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
	// Settled says the tool call is over whatever ToolStatus says: an async
	// launch returns as soon as the subagent is started (docs/CONTRACT.md
	// §7). It settles the row like a terminal tool status does (AC-11).
	Settled bool
	// ObservedAt is when the host observed this frame. Zero means "now" to
	// the Recorder.
	ObservedAt time.Time
	// StartedAt and EndedAt are the subagent's own start and end, where
	// the frame's source reports them (an SDK task message, a hook event,
	// a child session's state, a transcript): zero means not reported.
	// They are the agent's lifecycle, apart from the tool call's
	// (docs/CONTRACT.md §3.4).
	StartedAt time.Time
	EndedAt   time.Time
	// Usage is the run's usage as a source read it (nil: not reported).
	Usage *Usage
	// Payload may be nil: the frame then carries identity and statuses only.
	Payload *Payload
}

// Usage is a subagent run's usage, summed over its model requests, each
// counted once; a nil field was not reported.
type Usage struct {
	InputTokens      *int64 `json:"input_tokens,omitempty"`
	OutputTokens     *int64 `json:"output_tokens,omitempty"`
	CacheReadTokens  *int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens *int64 `json:"cache_write_tokens,omitempty"`
	Requests         *int64 `json:"requests,omitempty"`
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

// RowKey identifies a row: UNIQUE (task_session_id, agent_execution_id,
// tool_call_id), in that order. tool_call_id alone is unique only within one
// execution (AC-32).
type RowKey struct {
	TaskSessionID    string `json:"task_session_id"`
	AgentExecutionID string `json:"agent_execution_id"`
	ToolCallID       string `json:"tool_call_id"`
}

// Subagent is one row of task_session_subagents (its columns are declared
// in storekit.Columns). Every nullable column is a pointer, so a reported 0
// and "not reported" never collapse (AC-7, AC-8) and an empty string is
// never stored (it is NULL). It marshals to JSON under the column names.
type Subagent struct {
	ID               string  `json:"id"`
	TaskSessionID    string  `json:"task_session_id"`
	TaskID           string  `json:"task_id"`
	TurnID           *string `json:"turn_id"`
	AgentExecutionID string  `json:"agent_execution_id"`
	ToolCallID       string  `json:"tool_call_id"`
	ParentToolCallID *string `json:"parent_tool_call_id"`
	SubagentType     *string `json:"subagent_type"`
	Description      *string `json:"description"`
	AgentID          *string `json:"agent_id"`
	ChildSessionID   *string `json:"child_session_id"`
	Model            *string `json:"model"`
	AgentStatus      *string `json:"agent_status"`
	ToolStatus       *string `json:"tool_status"`
	IsAsync          bool    `json:"is_async"`
	// TotalTokens is Kandev's figure: the subagent's final request's
	// tokens ("context at completion"), not what the run spent.
	TotalTokens  *int64 `json:"total_tokens"`
	ToolUseCount *int64 `json:"tool_use_count"`
	DurationMs   *int64 `json:"duration_ms"`
	// The run's usage, summed over its model requests (each once), where a
	// source reported it (a transcript, an SDK's task usage, ACP's child
	// usage): NULL when not reported, never 0 for unknown.
	InputTokens      *int64 `json:"input_tokens"`
	OutputTokens     *int64 `json:"output_tokens"`
	CacheReadTokens  *int64 `json:"cache_read_tokens"`
	CacheWriteTokens *int64 `json:"cache_write_tokens"`
	Requests         *int64 `json:"requests"`
	Source           Source `json:"source"`
	// ObservedAt is the first observation of a recognisable frame; it is not
	// a start time (AC-1a).
	ObservedAt time.Time `json:"observed_at"`
	// SettledAt is the first observation of a terminal tool_status (AC-11).
	SettledAt *time.Time `json:"settled_at"`
	// StartedAt is the subagent's own first start, where a source reported
	// one; never the observation time (AC-1a).
	StartedAt *time.Time `json:"started_at"`
	// EndedAt is when the subagent's run ended, as its source reported or
	// first observed it; NULL while it runs, or when no end was seen. A
	// synchronous subagent ends with its tool call (docs/CONTRACT.md §3.4).
	EndedAt *time.Time `json:"ended_at"`
	// UpdatedAt is the time of the last write.
	UpdatedAt time.Time `json:"updated_at"`
}

// Key returns the row's unique key.
func (s *Subagent) Key() RowKey {
	return RowKey{TaskSessionID: s.TaskSessionID, AgentExecutionID: s.AgentExecutionID, ToolCallID: s.ToolCallID}
}
