package acp

import (
	"path"
	"regexp"
	"slices"
	"strconv"
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
	// ACP's tool-call name draft: a programmatic name, trusted only as the
	// subagent tool of the agent the host says it runs (another agent's
	// tool may share the name).
	switch agent := c.id.Agent.canonical(); {
	case agent == AgentClaudeCode && (c.name == "Agent" || c.name == "Task"):
		return one{claudeCode{}}
	case agent == AgentOpenCode && c.name == "task":
		return one{openCode{}}
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
	p.AgentID = r.first("agentId", "taskId") // a remote launch's agent is its task
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
		// provider/model with both; either alone when only one is sent.
		provider, model := m.first("providerID", "providerId"), m.first("modelID", "modelId")
		p.Model = provider + "/" + model
		if provider == "" || model == "" {
			p.Model = provider + model
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

// auggie: the title names the type and the description; rawInput's
// description and subagent_type, when it has them, win (the title fills
// only what the input lacks).
type auggie struct{}

func (auggie) fill(_ *session, _ string, c *call, f *core.Frame) {
	p := f.Payload
	input(c, p)
	if m := auggieTitle.FindStringSubmatch(c.title); m != nil {
		p.SubagentType, p.Description = cmpOr(p.SubagentType, m[1]), cmpOr(p.Description, strings.TrimSpace(m[2]))
	}
}

// codex (only when the host says the agent is Codex) reads codex-acp's
// notifications each on its own, as the reference host does
// (docs/CONTRACT.md §7, Codex):
//
//   - a spawn, _meta.codex.collaboration {tool "spawnAgent", senderThreadId,
//     receiverThreadIds} (tool_call or tool_call_update), is a row per child
//     thread it names — from the meta's receivers, else rawInput's
//     receiverThreadIds, and rawInput.agentsStates' keys — with the child as
//     child_session_id, its agentsStates status (else rawInput.status) as
//     agent_status, its agentsStates message (else rawInput's description,
//     else the prompt) as description, rawInput.model as model, and the
//     call's ACP status as tool_status; other collaboration tools (interact,
//     wait, close) are not subagents;
//   - an activity, _meta.codex.subagent {threadId, path, activity}, belongs
//     to the row of the spawn that named its thread, under whatever tool
//     call id it comes (the correlation outlives the spawn's settling): it
//     gives the row its subagent_type (the base name of the path) and the
//     child's state as agent_status; on the spawn's own id its ACP status is
//     the call's; under another id only a terminal activity carries its ACP
//     status, and settles the row. An activity for a thread no spawn named
//     makes a row only when it is "started" (child, type and description from
//     the path, its own ACP status); any other — a terminal state, the
//     non-creating "interacted" — makes none;
//   - a result without children (a tool_call_update naming no receiver and
//     no state, or no Codex metadata at all) belongs to the call's only row;
//     under a wire id several children share, it is ambiguous and ignored;
//   - the proposed _meta.codex {toolName "Agent", subAgent {agentThreadId,
//     runId}} is a row as Claude Code's is.
//
// Siblings on one wire id are rows apart: the first child thread a call
// names keeps the call's id, each further one is "<call id>/<thread id>". A
// spawn sent from a known child's thread nests under that child's row. A
// child's state only moves forward (pending, started, running, then a
// terminal state), whatever order its frames come in.
type codex struct{}

// codexShape is the Codex metadata of a call's latest notification.
func codexShape(c *call) (collab, sub, agent jsonMap) {
	meta := c.lastMeta.object("codex")
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
		f.ToolCallID = s.spawned(tool, c, p.ChildSessionID)
		return []core.Frame{f}
	case collab.str("tool") == "spawnAgent":
		return codexSpawn(s, tool, c, collab, base)
	case sub != nil:
		return codexActivity(s, tool, c, sub, base)
	case collab != nil:
		return nil // another collaboration tool: not a spawn's
	}
	return codexResult(s, tool, c, base)
}

// codexSpawn is a spawn's rows: one per child thread it names.
func codexSpawn(s *session, tool string, c *call, collab jsonMap, base core.Frame) []core.Frame {
	in := c.lastInput
	states := in.object("agentsStates")
	var children []string
	add := func(id string) {
		if id != "" && !slices.Contains(children, id) {
			children = append(children, id)
		}
	}
	add(collab.first("receiverThreadId", "newThreadId"))
	for _, from := range []jsonMap{collab, in} {
		if ids, ok := from["receiverThreadIds"].([]any); ok {
			for _, id := range ids {
				s, _ := id.(string)
				add(s)
			}
		}
	}
	for _, id := range sortedKeys(states) {
		add(id)
	}
	if len(children) == 0 {
		return codexResult(s, tool, c, base)
	}
	parent, nested := s.children[collab.first("senderThreadId")]
	var out []core.Frame
	for _, child := range children {
		f := base
		p := core.Payload{}
		f.Payload = &p
		state := states.object(child)
		p.ChildSessionID = child
		p.SubagentType = cmpOr(collab.first("agentType", "agent_type"), in.first("subagent_type", "subagentType"))
		p.Description = cmpOr(state.str("message"), cmpOr(collab.first("description"),
			cmpOr(in.first("description"), in.first("prompt"))))
		p.Model = cmpOr(collab.first("model"), in.first("model"))
		p.Status = cmpOr(state.str("status"), cmpOr(in.first("status"), collab.first("status")))
		f.ToolCallID = s.spawned(tool, c, child)
		p.Status = s.forward(child, p.Status)
		if nested && parent != f.ToolCallID {
			f.ParentToolCallID = parent
		}
		out = append(out, f)
	}
	return out
}

// codexResult is a notification naming no child: the call's status (and
// what its input says) for its only row; nothing when several children
// share the wire id, or when no spawn made a row of it.
func codexResult(s *session, tool string, c *call, base core.Frame) []core.Frame {
	switch len(c.threads) {
	case 0:
		if c.lastMeta.object("codex").object("collaboration").str("tool") != "spawnAgent" {
			return nil
		}
	case 1:
		base.Payload.ChildSessionID = c.threads[0]
	default:
		return nil // whose result it is cannot be told
	}
	base.ToolCallID = s.reserve(tool, tool)
	base.Payload.Model = c.lastInput.first("model")
	return []core.Frame{base}
}

// codexActivity is an activity frame's row: the spawn's of its thread, or,
// for a "started" thread no spawn named, its own. A "started" activity
// naming no thread belongs to its call's only row (or is the call's own,
// when it has none yet); beside several children of the call, whose it is
// cannot be told, and it is a row of its own.
func codexActivity(s *session, tool string, c *call, sub jsonMap, base core.Frame) []core.Frame {
	f := base
	p := core.Payload{}
	f.Payload = &p
	thread := cmpOr(sub.first("threadId"), c.lastInput.first("agentThreadId"))
	activity := cmpOr(sub.first("activity"), sub.first("status"))
	if codexEvents[activity] || (thread == "" && activity != "started") {
		return nil
	}
	p.ChildSessionID = thread
	p.SubagentType = cmpOr(sub.first("agentType", "agent_type"),
		codexAgentName(cmpOr(sub.first("path"), c.lastInput.first("agentPath"))))
	p.Model = sub.first("model")
	terminal := codexRank(activity) == codexTerminal
	described := func() { p.Description = cmpOr(sub.first("description"), p.SubagentType) }
	switch row, known := s.children[thread]; {
	case thread == "" && len(c.threads) > 1:
		f.ToolCallID = s.reserve(tool+"/", tool+"\x00")
		described()
	case thread == "":
		f.ToolCallID = s.reserve(tool, tool)
		if len(c.threads) == 1 {
			thread = c.threads[0]
			p.ChildSessionID = thread
		}
		if _, made := s.current[f.ToolCallID]; made {
			p.Description = sub.first("description")
		} else {
			described()
		}
	case known:
		f.ToolCallID = row
		if s.rows[row] != tool && !terminal {
			f.ToolStatus = "" // another call's ACP status is not the spawn's
		}
		p.Description = sub.first("description")
	case activity == "started":
		f.ToolCallID = s.spawned(tool, c, thread)
		described()
	default:
		return nil // only "started" announces a child no spawn named
	}
	if terminal {
		f.Settled = true // the child is over, and so is the call that spawned it
	}
	p.Status = s.forward(thread, activity)
	return []core.Frame{f}
}

// codexAgentName is the agent's name in its path, the last segment
// ("/root/review_agent/" ⇒ "review_agent"): none for a path of no segment.
func codexAgentName(agentPath string) string {
	name := path.Base(strings.TrimSpace(agentPath))
	if name == "." || name == "/" {
		return ""
	}
	return name
}

// codexEvents are activities that report something the child did, not a
// state it is in: they change no row.
var codexEvents = map[string]bool{"interacted": true}

// Codex child states, in the order they move.
const (
	codexPending = iota
	codexStarted
	codexRunning
	codexTerminal
)

// codexRank orders a child's states: pending, started, running (any state
// not known here), then terminal.
func codexRank(status string) int {
	switch status {
	case "pending", "pendingInit", "queued":
		return codexPending
	case "started":
		return codexStarted
	case "completed", "complete", "failed", "errored", "error", "cancelled", "interrupted", "shutdown", "notFound":
		return codexTerminal
	}
	return codexRunning
}

// spawned registers a child thread of the call and returns the id of its
// row: the call's own for its first child thread (or none), the call's
// and the thread's for each further one (session.reserve). s's children
// map is bounded like the calls.
func (s *session) spawned(tool string, c *call, child string) string {
	if child == "" {
		return s.reserve(tool, tool)
	}
	i := slices.Index(c.threads, child)
	if i < 0 {
		c.threads = append(c.threads, child)
		i = len(c.threads) - 1
	}
	prev, ok := s.children[child]
	if !ok && len(s.children) >= s.maxCalls {
		s.forgetCorrelations()
	}
	var row string
	if i == 0 {
		row = s.reserve(tool, tool)
	} else {
		row = s.reserve(tool+"/"+child, tool+"\x00"+child)
	}
	if !ok {
		s.kept += correlationBytes + len(child)
	}
	s.kept += len(row) - len(prev)
	s.children[child] = row
	return row
}

// reserve is the id of the row owner names (a call's wire id for its own
// row, the wire id and a child thread for a further child's): want, unless
// another owner's row of the session holds it, else want with the first
// "~n" no other owner holds. An id made for a further child ("W/child")
// may come again as another call's wire id, or the other way round: the
// later one moves aside, so that two invocations never share a row, and
// an owner gets the same id every time.
func (s *session) reserve(want, owner string) string {
	id := want
	for n := 2; ; n++ {
		held, ok := s.rows[id]
		if !ok {
			s.rows[id] = owner
			s.kept += correlationBytes + len(id) + len(owner)
			return id
		}
		if held == owner {
			return id
		}
		id = want + "~" + strconv.Itoa(n)
	}
}

// forgetCorrelations drops the session's Codex correlations (past the cap
// on calls: children of calls long gone).
func (s *session) forgetCorrelations() {
	for child, row := range s.children {
		s.kept -= correlationBytes + len(child) + len(row)
	}
	for child, status := range s.statuses {
		s.kept -= correlationBytes + len(child) + len(status)
	}
	for row, owner := range s.rows {
		s.kept -= correlationBytes + len(row) + len(owner)
	}
	clear(s.children)
	clear(s.statuses)
	clear(s.rows)
}

// forward is the state to write for a child thread: the given one, unless
// an earlier frame has shown a later state (a terminal one is final).
func (s *session) forward(child, status string) string {
	if status == "" || child == "" {
		return status
	}
	prev, ok := s.statuses[child]
	if ok && (codexRank(prev) > codexRank(status) || codexRank(prev) == codexTerminal) {
		return prev
	}
	if !ok {
		s.kept += correlationBytes + len(child)
	}
	s.kept += len(status) - len(prev)
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
