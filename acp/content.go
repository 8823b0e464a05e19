package acp

import (
	"slices"
	"strings"

	"github.com/subagentctx/subagentctx/core"
)

// WithContent makes the tracker fill, in the frames it hands its caller,
// the content a host's UI shows of a subagent — its prompt, its result
// text, its output file and whether that file can be read — which the
// record never stores (docs/CONTRACT.md §2: core.Normalize drops them).
// readable says whether an output file can be read; nil trusts the
// agent's own word (Claude Code's toolResponse canReadOutputFile; not
// readable where it says nothing). The tracker does no I/O of its own. The content is what the calls already
// hold, so it counts toward WithMaxBytes as they do. It is for a host
// that forwards frames to a UI without a database (examples/sidecar).
func WithContent(readable func(path string) bool) Option {
	return func(t *Tracker) {
		t.content = true
		t.readable = readable
	}
}

// content fills a frame's content from its call (WithContent): the prompt
// from the input (or Cursor's cursor/task), the result from Claude Code's
// toolResponse or the call's rawOutput, the output file from either.
func (t *Tracker) fillContent(c *call, f *core.Frame) {
	p := f.Payload
	response := c.meta.object("claudeCode").object("toolResponse")
	out := (jsonMap{"out": c.output}).object("out")
	p.Prompt = cmpOr(c.input.first("prompt"), cmpOr(c.cursor.str("prompt"), response.str("prompt")))
	p.ResultText = resultText(response, c.output, out)
	p.OutputFile = cmpOr(response.first("outputFile", "output_file"), out.first("outputFile", "output_file"))
	switch {
	case p.OutputFile == "":
	case t.readable != nil:
		p.CanReadOutputFile = t.readable(p.OutputFile)
	default:
		p.CanReadOutputFile = response.flag("canReadOutputFile")
	}
}

// resultText is a call's result as text: Claude Code's toolResponse
// content blocks of type text that hold more than white space (as the
// reference host reads them), else the raw output when it is text, else
// its output, result or content text.
func resultText(response jsonMap, raw any, out jsonMap) string {
	if blocks, ok := response["content"].([]any); ok {
		var texts []string
		for _, b := range blocks {
			block := (jsonMap{"b": b}).object("b")
			if text := block.str("text"); block.str("type") == "text" && strings.TrimSpace(text) != "" {
				texts = append(texts, text)
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	if s, ok := raw.(string); ok {
		return s
	}
	return out.first("output", "result", "content")
}

// Current is the current frame of each row a tool call made (a Codex
// spawn of several children: each child's, "<call id>/<thread id>" after
// the first), by ACP session and tool call id, with the content
// WithContent fills: what its frames so far make it, each field the
// latest that reported it. None when the tracker does not know the call
// (or has forgotten it). It is what a host's UI shows of a call now.
func (t *Tracker) Current(acpSession, toolCallID string) []core.Frame {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sessions[acpSession]
	if s == nil {
		return nil
	}
	var out []core.Frame
	for id, f := range s.current {
		if id == toolCallID || strings.HasPrefix(id, toolCallID+"/") {
			p := *f.Payload
			f.Payload = &p
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b core.Frame) int { return strings.Compare(a.ToolCallID, b.ToolCallID) })
	return out
}

// remember merges a frame into its row's current frame and returns the
// bytes that added; past the cap on calls the session's current frames
// are forgotten (rows of calls long gone).
func (s *session) remember(f core.Frame) int {
	prev, ok := s.current[f.ToolCallID]
	if !ok && len(s.current) >= s.maxCalls {
		freed := 0
		for _, c := range s.current {
			freed += frameBytes(c)
		}
		clear(s.current)
		s.kept -= freed
		return s.remember(f) - freed
	}
	next := f
	if ok {
		next = mergeFrame(prev, f)
	}
	p := *next.Payload
	next.Payload = &p
	s.current[f.ToolCallID] = next
	added := frameBytes(next)
	if ok {
		added -= frameBytes(prev)
	}
	s.kept += added
	return added
}

// mergeFrame is next over prev: each field next reports, else prev's.
func mergeFrame(prev, next core.Frame) core.Frame {
	out := next
	out.ParentToolCallID = cmpOr(next.ParentToolCallID, prev.ParentToolCallID)
	out.ToolStatus = cmpOr(next.ToolStatus, prev.ToolStatus)
	out.Settled = next.Settled || prev.Settled
	out.ObservedAt = prev.ObservedAt
	a, b := prev.Payload, *next.Payload
	for _, f := range []struct {
		into *string
		was  string
	}{
		{&b.Description, a.Description}, {&b.Prompt, a.Prompt}, {&b.SubagentType, a.SubagentType},
		{&b.Status, a.Status}, {&b.AgentID, a.AgentID}, {&b.Model, a.Model}, {&b.ChildSessionID, a.ChildSessionID},
		{&b.ResultText, a.ResultText}, {&b.OutputFile, a.OutputFile},
	} {
		*f.into = cmpOr(*f.into, f.was)
	}
	for _, f := range []struct {
		into *int64
		was  int64
	}{{&b.DurationMs, a.DurationMs}, {&b.TotalTokens, a.TotalTokens}} {
		if *f.into == 0 {
			*f.into = f.was
		}
	}
	if b.ToolUseCount == nil {
		b.ToolUseCount = a.ToolUseCount
	}
	b.IsAsync = b.IsAsync || a.IsAsync
	b.CanReadOutputFile = b.CanReadOutputFile || a.CanReadOutputFile
	out.Payload = &b
	return out
}

// frameBytes is what a kept frame counts toward the byte bound: its text
// and a fixed weight.
func frameBytes(f core.Frame) int {
	p := f.Payload
	return correlationBytes + len(f.ToolCallID) + len(f.ParentToolCallID) + len(f.ToolStatus) +
		len(p.Description) + len(p.Prompt) + len(p.SubagentType) + len(p.Status) + len(p.AgentID) + len(p.Model) +
		len(p.ChildSessionID) + len(p.ResultText) + len(p.OutputFile)
}
