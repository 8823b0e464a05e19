package core

import (
	"encoding/json"
	"fmt"
	"time"
)

// frameJSON is a frame as one JSON object (the command line's `record`
// input): the frame's fields under the contract's column names, observed_at in RFC 3339
// with an optional fraction (absent: the recorder's clock), and the
// provider payload, Kandev's SubagentTaskPayload, under subagent_task.
type frameJSON struct {
	TaskSessionID    string   `json:"task_session_id"`
	TaskID           string   `json:"task_id"`
	TurnID           string   `json:"turn_id"`
	ExecutionID      string   `json:"execution_id"`
	ToolCallID       string   `json:"tool_call_id"`
	ParentToolCallID string   `json:"parent_tool_call_id"`
	ToolStatus       string   `json:"tool_status"`
	ObservedAt       string   `json:"observed_at"`
	SubagentTask     *Payload `json:"subagent_task"`
}

// DecodeFrame reads one JSON object into a Frame. Anything else (invalid
// JSON, an array, a scalar, a field of the wrong type, an observed_at that
// is not RFC 3339) is an error saying what.
func DecodeFrame(data []byte) (Frame, error) {
	var l frameJSON
	if err := json.Unmarshal(data, &l); err != nil {
		return Frame{}, fmt.Errorf("not a frame object: %w", err)
	}
	f := Frame{TaskSessionID: l.TaskSessionID, TaskID: l.TaskID, TurnID: l.TurnID, ExecutionID: l.ExecutionID,
		ToolCallID: l.ToolCallID, ParentToolCallID: l.ParentToolCallID, ToolStatus: l.ToolStatus, Payload: l.SubagentTask}
	if l.ObservedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, l.ObservedAt)
		if err != nil {
			return Frame{}, fmt.Errorf("observed_at %q is not RFC 3339", l.ObservedAt)
		}
		f.ObservedAt = t
	}
	return f, nil
}
