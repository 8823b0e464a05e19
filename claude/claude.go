// Package claude reads Claude Code's own reports of its subagents into
// frames: the Agent SDK's message stream (what `claude -p --output-format
// stream-json --verbose` prints and an SDK host reads) and the events
// Claude Code's hooks deliver. Both report what the tool-call stream
// cannot: a background subagent's start and real end (docs/CONTRACT.md
// §3.4, §7.1).
//
// A Stream reads one agent session's lines in order and remembers, in
// bounded memory, which tool call launched which agent: an SDK task
// message or a hook event names the agent (its task_id, agent_id), and
// its row is keyed by the Agent tool call's id. An end whose tool call the
// stream has not seen yet is held until it is (Pending), and can be
// joined to the store's rows by agent id afterwards (Resolve).
//
// Stability: covered by the module's semver promise (README, Stability).
package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// Identity is what the host knows of the agent session a stream belongs
// to and Claude Code's messages do not carry: the row's session, task,
// turn and execution.
type Identity struct {
	TaskSessionID string
	TaskID        string
	TurnID        string
	ExecutionID   string
}

// MaxPending bounds the ends a Stream holds for a tool call it has not
// seen, and maxAgents the agent ids it remembers: a stream of any length
// is read in bounded memory. Past either bound the oldest is forgotten,
// and counted (Counts).
const (
	MaxPending = 4096
	maxAgents  = 65536
)

// Stream reads one agent session's lines. It is not safe for concurrent
// use: one stream is read in order.
type Stream struct {
	now     func() time.Time
	agents  map[string]string // agent id → the Agent tool call's id
	order   []string          // agent ids, oldest first, to forget past maxAgents
	calls   map[string]bool   // the Agent tool calls seen
	others  map[string]bool   // tasks that are not subagents (a shell, a workflow)
	pending []Pending
	counts  Counts
}

// Pending is an agent's report (its start or end) whose launching tool
// call the stream has not seen: the frame lacks ToolCallID.
type Pending struct {
	AgentID string
	Frame   core.Frame
}

// Counts are what a Stream saw besides its frames.
type Counts struct {
	// Held: reports held until their tool call was seen.
	Held int `json:"held"`
	// Forgotten: reports dropped past the bound before their tool call came.
	Forgotten int `json:"forgotten"`
}

// NewStream returns a Stream whose observation times come from the
// wall clock (a line's own timestamp, where it has one, wins).
func NewStream() *Stream { return NewStreamAt(time.Now) }

// NewStreamAt is NewStream with the clock given (tests).
func NewStreamAt(now func() time.Time) *Stream {
	return &Stream{now: now, agents: map[string]string{}, calls: map[string]bool{}, others: map[string]bool{}}
}

// Counts returns what the stream has held and forgotten so far.
func (s *Stream) Counts() Counts { return s.counts }

// Pending returns the reports still waiting for their tool call.
func (s *Stream) Pending() []Pending { return append([]Pending(nil), s.pending...) }

// Resolve joins the pending reports to rows by agent id, within the
// stream's session (a row's agent_id is the Agent tool's agentId, the SDK's
// task_id, a hook's agent_id): it returns a frame for each report whose
// agent a row names, keyed by that row, and keeps the others pending.
func (s *Stream) Resolve(rows []core.Subagent) []core.Frame {
	byAgent := map[string]core.Subagent{}
	for _, r := range rows {
		if r.AgentID != nil {
			byAgent[*r.AgentID] = r
		}
	}
	var out []core.Frame
	kept := s.pending[:0]
	for _, p := range s.pending {
		r, ok := byAgent[p.AgentID]
		if !ok || r.TaskSessionID != p.Frame.TaskSessionID {
			kept = append(kept, p)
			continue
		}
		f := p.Frame
		f.ToolCallID, f.ExecutionID, f.TaskID = r.ToolCallID, r.AgentExecutionID, r.TaskID
		out = append(out, f)
	}
	s.pending = kept
	return out
}

// toolNames are the names of Claude Code's subagent tool: Agent, and Task
// before it was renamed.
var toolNames = map[string]bool{"Agent": true, "Task": true}

// toolInput is the Agent tool's input.
type toolInput struct {
	Description  string `json:"description"`
	SubagentType string `json:"subagent_type"`
	Model        string `json:"model"`
}

// toolResult is the Agent tool's result (the SDK's tool_use_result, a
// PostToolUse hook's tool_response): a synchronous run's status and
// totals; a background launch's status async_launched (or remote_launched,
// whose agent is its taskId), its agentId and no totals.
type toolResult struct {
	Status            string `json:"status"`
	AgentID           string `json:"agentId"`
	TaskID            string `json:"taskId"`
	Model             string `json:"model"`
	IsAsync           bool   `json:"isAsync"`
	TotalTokens       int64  `json:"totalTokens"`
	TotalDurationMs   int64  `json:"totalDurationMs"`
	TotalToolUseCount *int64 `json:"totalToolUseCount"`
}

// launch is the frame of the Agent tool call id — its input, and its
// result when it has returned (failed says the call returned an error) —
// then the reports held for the agent its result names.
func (s *Stream) launch(id Identity, at time.Time, tool, parent string, in *toolInput, res *toolResult,
	failed bool) []core.Frame {
	f := s.frame(id, at)
	f.ToolCallID, f.ParentToolCallID, f.ToolStatus = tool, parent, "in_progress"
	p := f.Payload
	if in != nil {
		p.Description, p.SubagentType, p.Model = in.Description, in.SubagentType, in.Model
	}
	switch {
	case failed:
		f.ToolStatus = "failed"
	case res != nil:
		f.ToolStatus = "completed"
		p.Status, p.AgentID, p.IsAsync = res.Status, res.AgentID, res.IsAsync
		if p.AgentID == "" {
			p.AgentID = res.TaskID
		}
		if res.Model != "" {
			p.Model = res.Model
		}
		p.TotalTokens, p.DurationMs, p.ToolUseCount = res.TotalTokens, res.TotalDurationMs, res.TotalToolUseCount
		if res.Status == "async_launched" || res.Status == "remote_launched" || res.IsAsync {
			// The tool call is over once the subagent is launched; the
			// agent's end comes later (docs/CONTRACT.md §3.4, §7).
			p.IsAsync, f.Settled = true, true
		}
	}
	s.calls[tool] = true
	if p.AgentID != "" {
		s.learn(p.AgentID, tool)
	}
	return append([]core.Frame{f}, s.release(p.AgentID, tool)...)
}

// frame is a frame of the stream's identity observed at at, with an empty
// payload.
func (s *Stream) frame(id Identity, at time.Time) core.Frame {
	return core.Frame{TaskSessionID: id.TaskSessionID, TaskID: id.TaskID, TurnID: id.TurnID,
		ExecutionID: id.ExecutionID, ObservedAt: at, Payload: &core.Payload{}}
}

// learn remembers that agent was launched by tool.
func (s *Stream) learn(agent, tool string) {
	if _, ok := s.agents[agent]; !ok {
		s.order = append(s.order, agent)
		if len(s.order) > maxAgents {
			delete(s.agents, s.order[0])
			s.order = s.order[1:]
		}
	}
	s.agents[agent] = tool
}

// other remembers a task that is not a subagent, so that its later
// messages are read past; past the bound the set starts again (a late
// message of a forgotten task is then held, and never joined).
func (s *Stream) other(task string) {
	if len(s.others) >= maxAgents {
		clear(s.others)
	}
	s.others[task] = true
}

// report is an agent's start or end, f without its tool call id: keyed
// now if the stream knows the agent's tool call (tool, when it is an Agent
// call the stream saw, or the one that launched agent), held otherwise. It
// returns the frames ready to write: the agent's held reports, then this
// one.
func (s *Stream) report(agent, tool string, f core.Frame) []core.Frame {
	if !s.calls[tool] {
		tool = s.agents[agent]
	}
	if tool == "" {
		if agent == "" {
			return nil // names neither its agent nor its tool call: nothing to join
		}
		s.counts.Held++
		s.pending = append(s.pending, Pending{AgentID: agent, Frame: f})
		if len(s.pending) > MaxPending {
			s.pending = s.pending[1:]
			s.counts.Forgotten++
		}
		return nil
	}
	if agent != "" {
		s.learn(agent, tool)
	}
	f.ToolCallID = tool
	return append(s.release(agent, tool), f)
}

// release returns the held reports of agent, keyed by tool, in the order
// they came, and stops holding them.
func (s *Stream) release(agent, tool string) []core.Frame {
	if agent == "" {
		return nil
	}
	var out []core.Frame
	kept := s.pending[:0]
	for _, p := range s.pending {
		if p.AgentID == agent {
			p.Frame.ToolCallID = tool
			out = append(out, p.Frame)
			continue
		}
		kept = append(kept, p)
	}
	s.pending = kept
	return out
}

// ErrNotJSON is returned for a line that is not one JSON object.
var ErrNotJSON = errors.New("not a JSON object")

// decodeLine reads one JSON object; anything after it is an error.
func decodeLine(line []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(line))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	if d.More() {
		return fmt.Errorf("%w: something follows the object on the line", ErrNotJSON)
	}
	return nil
}

// at is a line's own time where it has one (RFC 3339), else the clock's.
func (s *Stream) at(timestamp string) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, timestamp); err == nil {
		return t
	}
	return s.now()
}
