package acp

import (
	"regexp"
	"strings"

	"github.com/subagentctx/subagentctx/core"
)

// A provider is one agent's way of showing a subagent tool call: fill
// writes what the call shows so far into its frame. The rules are in
// docs/CONTRACT.md §7.
type provider interface {
	fill(s *session, tool string, c *call, f *core.Frame)
}

// recognise decides, from everything a tool call has shown so far, whose
// subagent call it is (nil: none, or not yet). Claude Code's own metadata
// is the most specific and is checked first.
func recognise(c *call) provider {
	claude := c.meta.object("claudeCode")
	switch tool := claude.str("toolName"); {
	case tool == "Agent" || tool == "Task":
		return claudeCode{}
	case claude != nil && tool != "":
		return nil // another of Claude Code's tools, whatever its title
	}
	if strings.EqualFold(c.input.str("_toolName"), "task") {
		return cursor{}
	}
	if auggieTitle.MatchString(c.title) {
		return auggie{}
	}
	if strings.EqualFold(strings.TrimSpace(c.title), "task") {
		return openCode{}
	}
	if c.id.Agent.canonical() == AgentCodex {
		codexMeta := c.meta.object("codex")
		if codexMeta.object("collaboration").str("tool") == "spawnAgent" || codexMeta.object("subagent") != nil {
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

// codex (only when the host says the agent is Codex): a spawnAgent
// collaboration makes a row, its child thread the child session; a spawn
// sent from a known child's thread nests under the call that spawned that
// child. A subagent's activity frame updates the row of the call that
// spawned its thread (or, for a thread no spawn showed, is a row of its
// own).
type codex struct{}

func (codex) fill(s *session, tool string, c *call, f *core.Frame) {
	p := f.Payload
	meta := c.meta.object("codex")
	collab, sub := meta.object("collaboration"), meta.object("subagent")
	if collab == nil {
		p.ChildSessionID = sub.first("threadId")
		if spawn, ok := s.children[p.ChildSessionID]; ok {
			// The spawn's row: the activity call's own ACP status is not
			// the spawn's.
			f.ToolCallID, f.ToolStatus = spawn, ""
		} else if parent, ok := s.children[sub.first("parentThreadId", "senderThreadId")]; ok {
			f.ParentToolCallID = parent
		}
		p.SubagentType, p.Description = sub.first("agentType", "agent_type"), sub.first("description")
		p.Model, p.Status = sub.first("model"), sub.first("status")
		return
	}
	p.ChildSessionID = collab.first("receiverThreadId", "newThreadId")
	if ids, ok := collab["receiverThreadIds"].([]any); ok && len(ids) > 0 && p.ChildSessionID == "" {
		p.ChildSessionID, _ = ids[0].(string)
	}
	p.SubagentType, p.Description = collab.first("agentType", "agent_type"), collab.first("description")
	p.Model, p.Status = collab.first("model"), collab.first("status")
	if p.ChildSessionID != "" {
		if len(s.children) >= s.maxCalls {
			clear(s.children) // bounded like the calls
		}
		s.children[p.ChildSessionID] = tool
	}
	if parent, ok := s.children[collab.first("senderThreadId")]; ok && parent != tool {
		f.ParentToolCallID = parent
	}
}
