// Package hosttest shows a host's own unit test using the memory adapter:
// the host code under test (Handler) gets a *core.Recorder, and the test
// gives it one over memory.New() and asserts on what was stored.
//
//	go -C examples test ./hosttest
package hosttest

import (
	"context"
	"slices"

	"github.com/subagentctx/subagentctx/core"
)

// ToolCallEvent is the host's own event type.
type ToolCallEvent struct {
	SessionID, TaskID, TurnID, ExecutionID, ToolCallID, Status string
	Kind                                                       string
	Subagent                                                   *core.Payload
}

// Handler is host code: it records subagent tool calls and ignores others.
type Handler struct{ Rec *core.Recorder }

// terminalStatuses are the host's own tool statuses that end a call; its
// test pins them against the library's (core.TerminalToolStatuses).
var terminalStatuses = []string{"complete", "completed", "success", "error", "failed", "cancelled"}

// Handle processes one event, and reports whether it ended a subagent call.
func (h *Handler) Handle(ctx context.Context, ev ToolCallEvent) (ended bool) {
	if ev.Kind != "subagent_task" {
		return false
	}
	h.Rec.Record(ctx, core.Frame{TaskSessionID: ev.SessionID, TaskID: ev.TaskID, TurnID: ev.TurnID,
		ExecutionID: ev.ExecutionID, ToolCallID: ev.ToolCallID, ToolStatus: ev.Status, Payload: ev.Subagent})
	return slices.Contains(terminalStatuses, ev.Status)
}
