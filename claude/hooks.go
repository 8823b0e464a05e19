package claude

import (
	"encoding/json"
	"fmt"

	"github.com/subagentctx/subagentctx/core"
)

// hookEvent is the JSON a Claude Code hook command reads on its stdin:
// SubagentStart and SubagentStop name the agent (agent_id, agent_type);
// PreToolUse, PostToolUse and PostToolUseFailure of the Agent tool name
// its tool call (tool_use_id), its input, and its response — whose
// agentId joins the agent's events to the call.
type hookEvent struct {
	Event        string          `json:"hook_event_name"`
	Timestamp    string          `json:"timestamp"`
	AgentID      string          `json:"agent_id"`
	AgentType    string          `json:"agent_type"`
	ToolName     string          `json:"tool_name"`
	ToolUseID    string          `json:"tool_use_id"`
	ToolInput    json.RawMessage `json:"tool_input"`
	ToolResponse json.RawMessage `json:"tool_response"`
}

// Hook reads one hook event, one JSON object a line, into the frames it
// reports (docs/CONTRACT.md §7.1): SubagentStart is the agent's start,
// SubagentStop its end (it fires once per turn of the subagent: an agent
// woken again starts and stops again), both joined to the Agent tool call
// whose response named the agent, else held (Pending, Resolve); the Agent
// tool's PreToolUse, PostToolUse and PostToolUseFailure are its call, its
// result and its failure. Other events are read past. A line that is not
// a JSON object, or names no hook event, is an error.
func (s *Stream) Hook(id Identity, line []byte) ([]core.Frame, error) {
	var e hookEvent
	if err := decodeLine(line, &e); err != nil {
		return nil, err
	}
	if e.Event == "" {
		return nil, fmt.Errorf("%w: no hook_event_name", ErrNotJSON)
	}
	at := s.at(e.Timestamp)
	switch e.Event {
	case "SubagentStart", "SubagentStop":
		if e.AgentID == "" {
			return nil, nil
		}
		f := s.frame(id, at)
		f.Payload.AgentID, f.Payload.SubagentType = e.AgentID, e.AgentType
		if e.Event == "SubagentStart" {
			f.StartedAt = at
		} else {
			f.EndedAt = at
		}
		return s.report(e.AgentID, "", f), nil
	case "PreToolUse", "PostToolUse", "PostToolUseFailure":
		if !toolNames[e.ToolName] || e.ToolUseID == "" {
			return nil, nil
		}
		var in toolInput
		_ = json.Unmarshal(e.ToolInput, &in)
		var res *toolResult
		if e.Event == "PostToolUse" {
			res = new(toolResult)
			if json.Unmarshal(e.ToolResponse, res) != nil {
				res = &toolResult{} // a response in another shape: the call returned, no more is known
			}
		}
		return s.launch(id, at, e.ToolUseID, "", &in, res, e.Event == "PostToolUseFailure"), nil
	}
	return nil, nil
}
