package acp

import (
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// Native subagent sessions follow ACP's draft (not yet in the protocol):
// instead of a tool call, the agent reports a subagent as a session of
// its own, in session/update notifications on the parent session —
// subagent_spawned {subagentSessionId, name, task} and
// subagent_state_update {subagentSessionId, state}, or in a later draft
// subagent_update {sessionId, title, description, state} — while the
// child's own tool calls come on the child session, Claude Code's carrying
// the parent's tool use id in _meta.claudeCode.parentToolUseId. The draft's
// names are all in this file.
//
// The draft of 2026-09-24 (RFD PR #1992) keeps subagent_update {sessionId,
// state} but makes state a snapshot object {state: running |
// requires_action | idle | unknown, stopReason?, usage?}, not an outcome:
// idle is not success (a child woken again runs again), cancelling is idle
// with stopReason cancelled, and an operation's outcome is the tool call
// that references the child through its content {type: "session",
// sessionId}. Read so: running is the agent's start (a later one reopens
// it), idle its end, the state word its agent status verbatim, and the
// referencing tool call — its id the row's key when nothing keyed it
// before — its tool status. unknown is an agent status like any other:
// never an end, never an outcome.
//
// Each child session is a row: keyed by the parent tool use id its frames
// carry, or by the child session id when none does; its name (or title) —
// a short label, what Claude Code's Task tool calls its description — as
// the description, a type only where the draft names one (subagentType),
// its state as the agent status, a terminal state settling it. Its task
// (the prompt) is content, not a column. The row is written once
// its key is known — at the first child frame naming the parent tool use,
// or at a terminal state — observed when the child was spawned. The
// child's own tool calls are never rows.

// nativeKinds are the draft's session/update kinds.
var nativeKinds = map[string]bool{"subagent_spawned": true, "subagent_state_update": true, "subagent_update": true}

// nativeTerminal maps a child session's terminal state to the tool
// status that settles its row.
var nativeTerminal = map[string]string{
	"completed": "completed", "done": "completed", "failed": "failed", "error": "failed", "cancelled": "cancelled",
}

// child is a native subagent session as its notifications have shown it.
type child struct {
	id             Identity // the host's identity for the parent session
	parent         string   // the parent ACP session
	key            string   // its row's tool call id, once known
	name, kind     string
	task           string // the prompt: content, for WithContent only
	state          string
	snapshots      bool        // the state came as a snapshot object (the 2026-09-24 draft)
	started, ended time.Time   // the snapshots' latest running, and the idle after it
	toolStatus     string      // the referencing tool call's status (snapshots)
	usage          *core.Usage // the snapshots' latest usage, where one carried it
	spawned        time.Time
	parentChildKey string // the parent session's own row, when it is a child too
	size           int    // what it counts toward the tracker's byte bound
}

// nativeUpdate reads one draft notification on the parent session
// acpSession. t.mu is held.
func (t *Tracker) nativeUpdate(id Identity, acpSession string, upd jsonMap) []core.Frame {
	session := upd.first("subagentSessionId", "sessionId")
	if session == "" {
		return nil
	}
	c := t.natives[session]
	if c == nil {
		if len(t.natives) >= t.maxSessions {
			t.forgetNatives() // children of sessions long gone
		}
		c = &child{id: id, parent: acpSession, spawned: t.now()}
		if p := t.natives[acpSession]; p != nil {
			c.parentChildKey = p.key
		}
		t.natives[session] = c
	}
	c.name = cmpOr(upd.first("name", "title"), c.name)
	c.kind = cmpOr(upd.first("subagentType", "subagent_type", "agentType"), c.kind)
	if t.content {
		c.task = cmpOr(upd.first("task"), c.task)
	}
	if snap := upd.object("state"); snap != nil {
		t.snapshot(c, snap.str("state"))
		if u := usageOf(snap.object("usage")); u != nil {
			c.usage = u
		}
	} else if state := upd.first("state", "status"); state != "" && nativeTerminal[c.state] == "" {
		c.state = state // a terminal state is final
	}
	if c.key == "" && (nativeTerminal[c.state] != "" || c.snapshots && !c.ended.IsZero()) {
		c.key = session
	}
	t.resize(session, c)
	frames := t.nativeRow(session, c)
	t.shrink()
	return frames
}

// snapshot reads a state snapshot of the 2026-09-24 draft: running starts
// the agent (again, after an idle), idle ends it; every state is its agent
// status, verbatim.
func (t *Tracker) snapshot(c *child, state string) {
	if state == "" {
		return
	}
	c.snapshots = true
	switch {
	case state == "running" && (c.started.IsZero() || !c.ended.IsZero()):
		c.started, c.ended = t.now(), time.Time{}
	case state == "idle" && c.ended.IsZero():
		c.ended = t.now()
	}
	c.state = state
}

// usageOf reads a snapshot's usage, ACP's Usage {inputTokens,
// outputTokens, totalTokens, thoughtTokens?, cachedReadTokens?,
// cachedWriteTokens?}: the child session's, across its turns, so a later
// reading of a run woken again is the larger one (docs/CONTRACT.md §3.5).
// Each figure as the agent reports it (ACP does not yet say whether its
// input counts the cached tokens); totalTokens and thoughtTokens have no
// column of their own, and the model requests are not reported. nil when
// none of the four is.
func usageOf(m jsonMap) *core.Usage {
	var u core.Usage
	some := false
	for _, f := range []struct {
		key string
		dst **int64
	}{{"inputTokens", &u.InputTokens}, {"outputTokens", &u.OutputTokens},
		{"cachedReadTokens", &u.CacheReadTokens}, {"cachedWriteTokens", &u.CacheWriteTokens}} {
		if n, ok := m.integer(f.key); ok {
			*f.dst, some = &n, true
		}
	}
	if !some {
		return nil
	}
	return &u
}

// nativeReferences reads the sessions a tool call's content references: a
// known child takes the call's status as its row's tool status, and the
// call's id as its row's key when nothing keyed it yet. t.mu is held.
func (t *Tracker) nativeReferences(u update) []core.Frame {
	var out []core.Frame
	for _, ref := range u.sessions {
		c := t.natives[ref]
		if c == nil {
			continue
		}
		if c.key == "" {
			c.key = u.toolCallID
		}
		if c.key == u.toolCallID && u.status != nil {
			c.toolStatus = *u.status
		}
		t.resize(ref, c)
		out = append(out, t.nativeRow(ref, c)...)
	}
	return out
}

// resize counts a child's strings toward the byte bound. t.mu is held.
func (t *Tracker) resize(session string, c *child) {
	size := correlationBytes + len(session) + len(c.parent) + len(c.key) + len(c.name) + len(c.kind) + len(c.task) +
		len(c.state) + len(c.toolStatus) + len(c.parentChildKey)
	t.bytes += size - c.size
	c.size = size
}

// forgetNatives drops every native child session kept. t.mu is held.
func (t *Tracker) forgetNatives() {
	for _, c := range t.natives {
		t.bytes -= c.size
	}
	clear(t.natives)
}

// dropOldestNative forgets the native child session spawned first; false
// when none is kept. t.mu is held.
func (t *Tracker) dropOldestNative() bool {
	oldest := ""
	for id, c := range t.natives {
		if oldest == "" || c.spawned.Before(t.natives[oldest].spawned) {
			oldest = id
		}
	}
	if oldest == "" {
		return false
	}
	t.bytes -= t.natives[oldest].size
	delete(t.natives, oldest)
	return true
}

// nativeChildCall reads a tool call on a child session: never a row of its
// own, it may name the parent's tool use, which keys the child's row.
// t.mu is held.
func (t *Tracker) nativeChildCall(session string, c *child, u update) []core.Frame {
	if c.key != "" {
		return nil
	}
	if c.key = u.meta.object("claudeCode").str("parentToolUseId"); c.key == "" {
		return nil
	}
	t.resize(session, c)
	return t.nativeRow(session, c)
}

// nativeRow is the child's frame, once its key is known.
func (t *Tracker) nativeRow(session string, c *child) []core.Frame {
	if c.key == "" || t.replaying[c.parent] {
		return nil
	}
	if p := t.natives[c.parent]; p != nil && c.parentChildKey == "" {
		c.parentChildKey = p.key
	}
	tool := nativeTerminal[c.state]
	if c.snapshots {
		tool = c.toolStatus
	}
	return []core.Frame{{
		TaskSessionID:    c.id.TaskSessionID,
		TaskID:           c.id.TaskID,
		TurnID:           c.id.TurnID,
		ExecutionID:      c.id.ExecutionID,
		ToolCallID:       c.key,
		ParentToolCallID: c.parentChildKey,
		ToolStatus:       tool,
		ObservedAt:       c.spawned,
		StartedAt:        c.started,
		EndedAt:          c.ended,
		Usage:            c.usage,
		Payload: &core.Payload{SubagentType: c.kind, Description: c.name, Prompt: c.task, Status: c.state,
			ChildSessionID: session, IsAsync: c.snapshots},
	}}
}
