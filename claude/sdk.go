package claude

import (
	"encoding/json"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// sdkMessage is one line of the Agent SDK's stream: an assistant message
// (its Agent tool calls), a user message (their results, tool_use_result
// the Agent tool's output), or a system message (task_started,
// task_progress, task_updated, task_notification). Every other type and
// subtype (init, result, stream events, …) carries no subagent and is
// read past.
type sdkMessage struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	Timestamp string `json:"timestamp"`
	Message   struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	ParentToolUseID string          `json:"parent_tool_use_id"`
	ToolUseResult   json.RawMessage `json:"tool_use_result"`

	TaskID       string `json:"task_id"`
	ToolUseID    string `json:"tool_use_id"`
	TaskType     string `json:"task_type"`
	Description  string `json:"description"`
	SubagentType string `json:"subagent_type"`
	Status       string `json:"status"`
	Patch        struct {
		Status string `json:"status"`
	} `json:"patch"`
}

// block is a content block of a message.
type block struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
}

// localAgent is the task type of a subagent; local_bash and
// local_workflow tasks are not subagents.
const localAgent = "local_agent"

// endedTaskStatuses are the task statuses that end an agent's run
// (task_updated's patch, task_notification).
var endedTaskStatuses = map[string]bool{"completed": true, "failed": true, "stopped": true, "killed": true}

// SDK reads one line of the Agent SDK's stream-json output into the
// frames it reports (docs/CONTRACT.md §7.1): the Agent tool calls of an
// assistant message (nested under parent_tool_use_id when a subagent
// makes them), their results from a user message's tool_result blocks and
// tool_use_result, and a local_agent task's start (task_started), status
// (task_updated) and end (task_notification, or a task_updated whose
// status ends it), joined to their tool call by tool_use_id, else by the
// task id, which is the Agent tool's agentId. A line that is not a JSON
// object is an error; any other line yields what it reports, often
// nothing.
func (s *Stream) SDK(id Identity, line []byte) ([]core.Frame, error) {
	var m sdkMessage
	if err := decodeLine(line, &m); err != nil {
		return nil, err
	}
	at := s.at(m.Timestamp)
	switch m.Type {
	case "assistant", "user":
		var blocks []block
		if json.Unmarshal(m.Message.Content, &blocks) != nil {
			return nil, nil // a string content: no tool call
		}
		var res *toolResult
		if len(m.ToolUseResult) > 0 {
			res = new(toolResult)
			if json.Unmarshal(m.ToolUseResult, res) != nil {
				res = nil // another tool's result, in a shape of its own
			}
		}
		return s.blocks(id, at, m.ParentToolUseID, blocks, res), nil
	case "system":
		return s.task(id, at, &m), nil
	}
	return nil, nil
}

// blocks are the frames of a message's Agent tool calls and results.
func (s *Stream) blocks(id Identity, at time.Time, parent string, blocks []block, res *toolResult) []core.Frame {
	var out []core.Frame
	for _, b := range blocks {
		switch {
		case b.Type == "tool_use" && toolNames[b.Name] && b.ID != "":
			var in toolInput
			_ = json.Unmarshal(b.Input, &in) // an input without these fields still launches
			out = append(out, s.launch(id, at, b.ID, parent, &in, nil, false)...)
		case b.Type == "tool_result" && s.calls[b.ToolUseID]:
			out = append(out, s.launch(id, at, b.ToolUseID, "", nil, res, b.IsError)...)
			res = nil // one message's tool_use_result is its first result's
		}
	}
	return out
}

// task is the frame of a task_* system message, if it reports a subagent.
func (s *Stream) task(id Identity, at time.Time, m *sdkMessage) []core.Frame {
	if m.TaskID == "" && m.ToolUseID == "" {
		return nil
	}
	f := s.frame(id, at)
	f.Payload.AgentID = m.TaskID
	switch m.Subtype {
	case "task_started":
		switch {
		case m.TaskType == localAgent && m.ToolUseID != "":
			s.calls[m.ToolUseID] = true // the SDK says this call launched a subagent
		case m.TaskType != "" && m.TaskType != localAgent:
			s.other(m.TaskID)
			return nil
		}
		f.StartedAt = at
		f.Payload.Description, f.Payload.SubagentType = m.Description, m.SubagentType
	case "task_updated":
		if m.Patch.Status == "" {
			return nil
		}
		f.Payload.Status = m.Patch.Status
		if endedTaskStatuses[m.Patch.Status] {
			f.EndedAt = at
		}
	case "task_notification":
		f.Payload.Status, f.EndedAt = m.Status, at
	default: // task_progress: its usage is the run's so far, not the row's
		return nil
	}
	if s.others[m.TaskID] {
		return nil
	}
	return s.report(m.TaskID, m.ToolUseID, f)
}
