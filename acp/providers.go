package acp

import (
	"regexp"
	"slices"
	"strings"

	"github.com/subagentctx/subagentctx/core"
)

// A provider is one agent's way of showing a subagent tool call: rows
// returns the frames of the rows the call shows so far, each from base (a
// call is one row, except Codex's spawn of several threads). The rules are
// in docs/CONTRACT.md §7.
type provider interface {
	rows(s *session, tool string, c *call, base core.Frame) []core.Frame
}

// filler is a provider whose call is one row: fill writes what the call
// shows so far into its frame.
type filler interface {
	fill(s *session, tool string, c *call, f *core.Frame)
}

// one is the provider of a filler.
type one struct{ filler }

func (o one) rows(s *session, tool string, c *call, base core.Frame) []core.Frame {
	o.fill(s, tool, c, &base)
	return []core.Frame{base}
}

// recognise decides, from everything a tool call has shown so far, whose
// subagent call it is (nil: none, or not yet). Claude Code's own metadata
// is the most specific and is checked first.
func recognise(c *call) provider {
	claude := c.meta.object("claudeCode")
	switch tool := claude.str("toolName"); {
	case tool == "Agent" || tool == "Task":
		return one{claudeCode{}}
	case claude != nil && tool != "":
		return nil // another of Claude Code's tools, whatever its title
	}
	if strings.EqualFold(c.input.str("_toolName"), "task") {
		return one{cursor{}}
	}
	if auggieTitle.MatchString(c.title) {
		return one{auggie{}}
	}
	if strings.EqualFold(strings.TrimSpace(c.title), "task") {
		return one{openCode{}}
	}
	if c.id.Agent.canonical() == AgentCodex {
		if collab, sub, agent := codexShape(c); collab.str("tool") == "spawnAgent" || sub != nil || agent != nil {
			return codex{}
		}
	}
	return nil
}

// input fills what every provider's task tool takes as input.
func input(c *call, p *core.Payload) {
	p.Description = c.input.first("description")
	p.SubagentType = c.input.first("subagent_type", "subagentType")
}

// claudeCode: _meta.claudeCode.toolName is Agent (or the legacy Task); the
// input is rawInput; the result is _meta.claudeCode.toolResponse, which may
// arrive after the terminal status; the parent is parentToolUseId.
type claudeCode struct{}

func (claudeCode) fill(_ *session, _ string, c *call, f *core.Frame) {
	p := f.Payload
	input(c, p)
	meta := c.meta.object("claudeCode")
	f.ParentToolCallID = meta.str("parentToolUseId")
	r := meta.object("toolResponse")
	p.AgentID = r.str("agentId")
	p.Status = r.str("status")
	p.Model = r.first("model", "resolvedModel")
	p.TotalTokens, _ = r.integer("totalTokens")
	p.DurationMs, _ = r.integer("totalDurationMs")
	if n, ok := r.integer("totalToolUseCount"); ok {
		p.ToolUseCount = &n
	}
	p.IsAsync = r.flag("isAsync")
}

// openCode: the title is "task"; the child session and the model
// (providerID/modelID) are in rawOutput.metadata.
type openCode struct{}

func (openCode) fill(_ *session, _ string, c *call, f *core.Frame) {
	p := f.Payload
	input(c, p)
	meta := (jsonMap{"out": c.output}).object("out").object("metadata")
	p.ChildSessionID = meta.first("sessionId", "sessionID")
	if m := meta.object("model"); m != nil {
		if provider, model := m.first("providerID", "providerId"), m.first("modelID", "modelId"); model != "" {
			p.Model = model
			if provider != "" {
				p.Model = provider + "/" + model
			}
		}
	} else {
		p.Model = meta.str("model")
	}
}

// cursor: rawInput._toolName is "task"; the duration and the background
// flag are in rawOutput; the cursor/task request adds the agent id, the
// description and the model.
type cursor struct{}

func (cursor) fill(_ *session, _ string, c *call, f *core.Frame) {
	p := f.Payload
	input(c, p)
	out := (jsonMap{"out": c.output}).object("out")
	p.DurationMs, _ = out.integer("durationMs", "duration_ms")
	p.IsAsync = out.flag("isBackground", "background", "runInBackground")
	p.AgentID = c.cursor.str("agentId")
	if d := c.cursor.str("description"); d != "" {
		p.Description = d
	}
	p.Model = c.cursor.str("model")
}

// auggieTitle is Auggie's subagent title: sub-agent-<type>: <description>.
var auggieTitle = regexp.MustCompile(`^sub-agent-([^:\s]+):\s*(.*)$`)

type auggie struct{}

func (auggie) fill(_ *session, _ string, c *call, f *core.Frame) {
	if m := auggieTitle.FindStringSubmatch(c.title); m != nil {
		f.Payload.SubagentType, f.Payload.Description = m[1], strings.TrimSpace(m[2])
	}
}

// codex (only when the host says the agent is Codex) reads both of
// codex-acp's metadata shapes: _meta.codex.collaboration {tool,
// senderThreadId, receiverThreadIds} on a collaboration call (its rawInput
// carrying the model and agentsStates: each child thread's status and
// message) with _meta.codex.subagent {threadId, path, activity} on a
// subagent's activity frames; and the proposed _meta.codex {toolName
// "Agent", subAgent {agentThreadId, runId}}. A spawnAgent call is a row
// per child thread it names (none named yet: one row); an activity frame
// updates the row of the call that spawned its thread, or is a row of its
// own for a thread no spawn named (real runs may send no spawn, or leave
// its receivers empty: "started" is the dependable signal), settled by a
// terminal activity. Siblings on one wire id are rows apart: the first
// child thread a call names keeps the call's id, each further one is
// "<call id>/<thread id>". A spawn sent from a known child's thread nests
// under that child's row. A child's status only moves forward (pending,
// then running, then a terminal state), whatever order its frames come in.
type codex struct{}

// codexShape is the Codex metadata a call carries, if any.
func codexShape(c *call) (collab, sub, agent jsonMap) {
	meta := c.meta.object("codex")
	if meta.str("toolName") == "Agent" {
		agent = meta
	}
	return meta.object("collaboration"), meta.object("subagent"), agent
}

func (codex) rows(s *session, tool string, c *call, base core.Frame) []core.Frame {
	collab, sub, agent := codexShape(c)
	switch {
	case agent != nil:
		f := base
		p := *base.Payload
		f.Payload = &p
		input(c, f.Payload)
		sa := agent.object("subAgent")
		p.ChildSessionID, p.AgentID = sa.first("agentThreadId"), sa.first("runId")
		p.Model = c.input.first("model")
		s.spawned(tool, c, p.ChildSessionID)
		return []core.Frame{f}
	case collab != nil:
		return codexSpawn(s, tool, c, collab, base)
	}
	return []core.Frame{codexActivity(s, tool, c, sub, base)}
}

// codexSpawn is a spawn's rows: one per child thread it names.
func codexSpawn(s *session, tool string, c *call, collab jsonMap, base core.Frame) []core.Frame {
	states := c.input.object("agentsStates")
	var children []string
	add := func(id string) {
		if id != "" && !slices.Contains(children, id) {
			children = append(children, id)
		}
	}
	add(collab.first("receiverThreadId", "newThreadId"))
	if ids, ok := collab["receiverThreadIds"].([]any); ok {
		for _, id := range ids {
			s, _ := id.(string)
			add(s)
		}
	}
	for _, id := range sortedKeys(states) {
		add(id)
	}
	if len(children) == 0 {
		children = []string{""}
	}
	parent, nested := s.children[collab.first("senderThreadId")]
	var out []core.Frame
	for _, child := range children {
		f := base
		p := core.Payload{}
		f.Payload = &p
		input(c, &p)
		p.SubagentType = cmpOr(collab.first("agentType", "agent_type"), p.SubagentType)
		p.Description = cmpOr(collab.first("description"), p.Description)
		p.Model = cmpOr(collab.first("model"), c.input.first("model"))
		p.Status = collab.first("status")
		if child != "" {
			state := states.object(child)
			p.ChildSessionID = child
			p.Description = cmpOr(state.str("message"), p.Description)
			p.Status = cmpOr(state.str("status"), p.Status)
			f.ToolCallID = s.spawned(tool, c, child)
		}
		p.Status = s.forward(cmpOr(child, f.ToolCallID), p.Status)
		if nested && parent != f.ToolCallID {
			f.ParentToolCallID = parent
		}
		out = append(out, f)
	}
	return out
}

// codexActivity is an activity frame's row: the spawn's of its thread, or
// its own.
func codexActivity(s *session, tool string, c *call, sub jsonMap, base core.Frame) core.Frame {
	f := base
	p := core.Payload{}
	f.Payload = &p
	thread := sub.first("threadId")
	p.ChildSessionID = thread
	path := sub.first("path")
	p.SubagentType = path[strings.LastIndex(path, "/")+1:]
	p.SubagentType = cmpOr(sub.first("agentType", "agent_type"), p.SubagentType)
	p.Description, p.Model = sub.first("description"), sub.first("model")
	activity := cmpOr(sub.first("activity"), sub.first("status"))
	if row, ok := s.children[thread]; ok {
		// The thread's row: the activity call's own ACP status is not its.
		f.ToolCallID, f.ToolStatus = row, ""
	} else {
		f.ToolCallID = s.spawned(tool, c, thread)
	}
	if settled := codexTerminal[activity]; settled != "" {
		f.ToolStatus = settled // the subagent is over: its row settles
	}
	p.Status = s.forward(cmpOr(thread, f.ToolCallID), activity)
	return f
}

// codexTerminal maps a subagent's terminal activity to the tool status
// that settles its own row.
var codexTerminal = map[string]string{
	"completed": "completed", "failed": "failed", "errored": "failed", "error": "failed",
	"cancelled": "cancelled", "interrupted": "cancelled", "shutdown": "cancelled",
}

// codexRank orders a child's statuses: pending, then running (any status
// not known here), then terminal.
func codexRank(status string) int {
	switch {
	case status == "pending" || status == "pendingInit" || status == "queued":
		return 0
	case codexTerminal[status] != "":
		return 2
	}
	return 1
}

// spawned registers a child thread of the call and returns the id of its
// row: the call's own for its first child thread (or none), the call's
// and the thread's for each further one. s's children map is bounded like
// the calls.
func (s *session) spawned(tool string, c *call, child string) string {
	if child == "" {
		return tool
	}
	i := slices.Index(c.threads, child)
	if i < 0 {
		c.threads = append(c.threads, child)
		i = len(c.threads) - 1
	}
	row := tool
	if i > 0 {
		row = tool + "/" + child
	}
	if _, ok := s.children[child]; !ok && len(s.children) >= s.maxCalls {
		clear(s.children)
		clear(s.statuses)
	}
	s.children[child] = row
	return row
}

// forward is the status to write for a child (by its thread id or row):
// the given one, unless an earlier frame has shown a later state.
func (s *session) forward(child, status string) string {
	if status == "" || child == "" {
		return status
	}
	if prev, ok := s.statuses[child]; ok && codexRank(prev) > codexRank(status) {
		return prev
	}
	if prev, ok := s.statuses[child]; ok && codexRank(prev) == 2 {
		return prev // a terminal state is final
	}
	s.statuses[child] = status
	return status
}

// cmpOr is the first non-empty string.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sortedKeys are a JSON object's keys in byte order.
func sortedKeys(m jsonMap) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
