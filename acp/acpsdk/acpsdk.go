// Package acpsdk is package acp's path from github.com/coder/acp-go-sdk:
// a host whose ACP client receives the SDK's typed notifications hands
// them to the tracker here. Only hosts on that SDK link it (and the SDK);
// package acp's raw path links neither, so a host pinned to another
// version or a fork of the SDK can use acp.Tracker.Line or acp.Tap alone.
//
// The typed path goes through the notification's JSON: the tracker reads
// it exactly as the raw path reads the line. The SDK has already decoded
// the notification's free-form fields (rawInput, rawOutput, _meta) into
// float64 numbers, so an integer above 2^53 there arrives rounded; a host
// that needs every digit (token counts of very long runs) taps the
// agent's stream with acp.Tap instead.
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package acpsdk

import (
	"encoding/json"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// Update takes one typed session/update notification and returns the
// frames it implies (none for anything but a subagent tool call), as
// acp.Tracker.UpdateJSON does with its JSON.
func Update(t *acp.Tracker, id acp.Identity, n sdk.SessionNotification) ([]core.Frame, error) {
	// The SDK decodes a kind it does not know, with a tool call's fields,
	// as a tool call and writes it back as one: the kind it read is the
	// one to trust.
	switch u := n.Update; {
	case u.ToolCall != nil && u.ToolCall.SessionUpdate == "tool_call",
		u.ToolCallUpdate != nil && u.ToolCallUpdate.SessionUpdate == "tool_call_update":
	default:
		return nil, nil
	}
	params, err := json.Marshal(n)
	if err != nil {
		return nil, liberr.Errorf("acp: a typed notification: %w", err)
	}
	return t.UpdateJSON(id, params)
}
