package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/core"
)

// TestSidecarCards: through a real ACP connection (the agent's side an
// SDK AgentSideConnection), a sidecar with no database hands its UI a card
// per frame — the frame's columns, and the content the record never
// stores: prompt, result text, output file and whether it can be read —
// and Tracker.Current answers the card's state by ACP session and tool
// call id, each field the latest that reported it.
func TestSidecarCards(t *testing.T) {
	ctx := context.Background()
	output := filepath.Join(t.TempDir(), "a2.output")
	if err := os.WriteFile(output, []byte("done"), 0o600); err != nil {
		t.Fatal(err)
	}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	defer toAgentW.Close()
	defer toClientW.Close()
	agent := sdk.NewAgentSideConnection(nil, toClientW, toAgentR)
	cards := make(chan core.Frame, 16)
	_, tracker := Sidecar(client{}, toAgentW, toClientR, func(string) acp.Identity {
		return acp.Identity{TaskSessionID: "session-9", TaskID: "task-9", ExecutionID: "exec-9"}
	}, readable, func(session string, f core.Frame) {
		if session == "acp-9" {
			cards <- f
		}
	})
	send := func(s string) {
		var n sdk.SessionNotification
		if err := json.Unmarshal([]byte(s), &n); err != nil {
			t.Fatal(err)
		}
		if err := agent.SessionUpdate(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"sessionId":"acp-9","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_a","title":"Task",` +
		`"status":"in_progress","rawInput":{"description":"Review","prompt":"Review the diff",` +
		`"subagent_type":"reviewer"},"_meta":{"claudeCode":{"toolName":"Agent"}}}}`)
	send(`{"sessionId":"acp-9","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_a",` +
		`"status":"completed","_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"agentId":"a2",` +
		`"status":"completed","outputFile":"` + output + `","content":[{"type":"text","text":"No issues."}],` +
		`"totalTokens":1200}}}}}`)
	var got []core.Frame
	for len(got) < 2 {
		select {
		case f := <-cards:
			got = append(got, f)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d cards of 2", len(got))
		}
	}
	if p := got[0].Payload; p.Prompt != "Review the diff" || p.ResultText != "" || p.Description != "Review" {
		t.Errorf("the first card: %+v", p)
	}
	if p := got[1].Payload; p.ResultText != "No issues." || p.OutputFile != output || !p.CanReadOutputFile ||
		p.TotalTokens != 1200 || got[1].ToolStatus != "completed" {
		t.Errorf("the completed card: %+v", p)
	}
	cur := tracker.Current("acp-9", "toolu_a")
	if len(cur) != 1 || cur[0].Payload.Prompt != "Review the diff" || cur[0].Payload.ResultText != "No issues." ||
		cur[0].Payload.SubagentType != "reviewer" || cur[0].ToolStatus != "completed" {
		t.Errorf("Current: %+v", cur)
	}
	if tracker.Current("acp-9", "toolu_nope") != nil || tracker.Current("acp-0", "toolu_a") != nil {
		t.Error("Current of an unknown call is not empty")
	}
	// The record stores none of the content.
	row, _ := core.Normalize(got[1])
	if b, _ := json.Marshal(row); strings.Contains(string(b), "No issues.") || strings.Contains(string(b), output) {
		t.Errorf("the row holds content: %s", b)
	}
}

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`prompt="Review the diff"`, `output=/tmp/tasks/a2.output readable=false async=true`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
