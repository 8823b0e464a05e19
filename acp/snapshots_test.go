package acp_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// fold writes frames over rows as a store would (storekit.Write), by tool
// call id.
func fold(frames []core.Frame) map[string]core.Subagent {
	rows := map[core.RowKey]core.Subagent{}
	for _, f := range frames {
		if row, v := core.Normalize(f); !v.NoIdentity {
			storekit.Write(rows, row)
		}
	}
	out := map[string]core.Subagent{}
	for k, r := range rows {
		out[k.ToolCallID] = r
	}
	return out
}

func text(p *string) string {
	if p == nil {
		return "NULL"
	}
	return *p
}

// TestNativeSnapshots (docs/CONTRACT.md §3.4, §7): native subagent sessions
// in the shape of ACP's subagent RFD as revised on 2026-09-24 (PR #1992,
// docs/rfds/subagents.mdx: subagent_update {sessionId, state: {state,
// stopReason}}, tool-call content {"type": "session"}): running starts the
// agent, idle ends it and is not success, a child woken again runs again,
// unknown is a status and never an end, and the referencing tool call —
// the delegation — keys the row and gives its tool status; a later send
// to the same child changes neither; a snapshot's usage is the run's
// (§3.5), each figure reported or NULL.
func TestNativeSnapshots(t *testing.T) {
	rows := fold(traffic(t, acp.NewTracker(acp.WithClock(clock())), identity("s"), "native-snapshots.jsonl"))
	if len(rows) != 3 {
		t.Fatalf("%d rows, want delegate_1, delegate_2 and child-C's: %v", len(rows), rows)
	}
	a := rows["delegate_1"]
	if text(a.ChildSessionID) != "child-A" || text(a.ToolStatus) != "completed" || a.SettledAt == nil ||
		text(a.AgentStatus) != "running" || a.StartedAt == nil || a.EndedAt != nil || !a.IsAsync {
		t.Errorf("delegate_1: child %s tool %s agent %s started %v ended %v async %v; want child-A's delegation "+
			"completed, the child woken again and running", text(a.ChildSessionID), text(a.ToolStatus),
			text(a.AgentStatus), a.StartedAt, a.EndedAt, a.IsAsync)
	}
	if _, ok := rows["send_follow_up"]; ok {
		t.Error("a send to a keyed child made a row of its own")
	}
	b := rows["delegate_2"]
	if text(b.AgentStatus) != "unknown" || b.EndedAt != nil || text(b.ToolStatus) != "in_progress" {
		t.Errorf("delegate_2: agent %s ended %v tool %s; want unknown, no end, no outcome", text(b.AgentStatus),
			b.EndedAt, text(b.ToolStatus))
	}
	n := func(p *int64) string {
		if p == nil {
			return "NULL"
		}
		return fmt.Sprint(*p)
	}
	if got := fmt.Sprintln(n(a.InputTokens), n(a.OutputTokens), n(a.CacheReadTokens), n(a.CacheWriteTokens),
		n(a.Requests)); got != "1200 400 200 NULL NULL\n" {
		t.Errorf("delegate_1's usage: %s, want the snapshot's, cache writes and requests unreported", got)
	}
	c := rows["child-C"]
	if got := fmt.Sprintln(n(c.InputTokens), n(c.OutputTokens), n(c.CacheReadTokens)); got != "50 10 NULL\n" {
		t.Errorf("child-C's usage: %s", got)
	}
	if text(c.AgentStatus) != "idle" || c.EndedAt == nil || c.StartedAt == nil || !c.EndedAt.After(*c.StartedAt) ||
		c.ToolStatus != nil || c.SettledAt != nil {
		t.Errorf("child-C: agent %s started %v ended %v tool %s; want idle, ended after its start, no tool outcome",
			text(c.AgentStatus), c.StartedAt, c.EndedAt, text(c.ToolStatus))
	}
}

// TestToolCallNameRecognised: ACP's tool-call name draft (name on
// tool_call) recognises the subagent tool of the agent the host names
// when no vendor _meta does, and never another agent's tool of that name.
func TestToolCallNameRecognised(t *testing.T) {
	line := []byte(`{"sessionId":"acp-1","update":{"sessionUpdate":"tool_call","toolCallId":"call_1",` +
		`"title":"Review the diff","name":"Agent","status":"in_progress",` +
		`"rawInput":{"description":"Review the diff","subagent_type":"code-reviewer"}}}`)
	for _, c := range []struct {
		agent acp.Agent
		rows  int
	}{{acp.AgentClaudeCode, 1}, {acp.AgentCodex, 0}, {"", 0}} {
		id := identity("s")
		id.Agent = c.agent
		frames, err := acp.NewTracker().UpdateJSON(id, line)
		if err != nil {
			t.Fatal(err)
		}
		if len(frames) != c.rows {
			t.Errorf("agent %q: %d frames, want %d", c.agent, len(frames), c.rows)
		} else if c.rows == 1 && (frames[0].Payload.SubagentType != "code-reviewer" || frames[0].ToolCallID != "call_1") {
			t.Errorf("agent %q: frame %+v", c.agent, frames[0])
		}
	}
}

// TestRemoteLaunchIsABackgroundRun: the Agent tool's remote_launched
// result (taskId, sessionUrl, outputFile) settles its tool call as a
// background launch, whose agent is its task, with no end.
func TestRemoteLaunchIsABackgroundRun(t *testing.T) {
	line := []byte(`{"sessionId":"acp-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_r",` +
		`"status":"completed","rawInput":{"description":"Port the CLI"},"_meta":{"claudeCode":{"toolName":"Agent",` +
		`"toolResponse":{"status":"remote_launched","taskId":"task_01R","sessionUrl":"https://claude.ai/code/x",` +
		`"outputFile":"/tmp/r.output"}}}}}`)
	frames, err := acp.NewTracker().UpdateJSON(identity("s"), line)
	if err != nil {
		t.Fatal(err)
	}
	r := fold(frames)["toolu_r"]
	if !r.IsAsync || r.SettledAt == nil || r.EndedAt != nil || text(r.AgentID) != "task_01R" ||
		text(r.AgentStatus) != "remote_launched" {
		t.Errorf("remote launch: async %v settled %v ended %v agent %s status %s", r.IsAsync, r.SettledAt, r.EndedAt,
			text(r.AgentID), text(r.AgentStatus))
	}
}

// TestLostMarksUnknown (docs/CONTRACT.md §3.4): a host that loses its agent
// calls Lost once; the subagents its traffic left running — a background
// launch, an open call, a native child not idle — come back with the
// agent status unknown; a synchronous call that returned, and a child that
// went idle, do not; the frames change no end and invent no outcome.
func TestLostMarksUnknown(t *testing.T) {
	tr := acp.NewTracker(acp.WithClock(clock()))
	id := identity("s")
	id.Agent = acp.AgentClaudeCode
	for _, line := range []string{
		`{"sessionId":"acp-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_bg","status":"completed",` +
			`"_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"status":"async_launched","agentId":"a1"}}}}}`,
		`{"sessionId":"acp-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_sync","status":"completed",` +
			`"_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"status":"completed","totalTokens":10}}}}}`,
		`{"sessionId":"acp-1","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_open","status":"in_progress",` +
			`"_meta":{"claudeCode":{"toolName":"Agent"}}}}`,
		`{"sessionId":"acp-1","update":{"sessionUpdate":"subagent_update","sessionId":"child-1",` +
			`"state":{"state":"running"}}}`,
		`{"sessionId":"acp-1","update":{"sessionUpdate":"tool_call","toolCallId":"delegate_1","status":"in_progress",` +
			`"content":[{"type":"session","sessionId":"child-1"}]}}`,
		`{"sessionId":"acp-1","update":{"sessionUpdate":"subagent_update","sessionId":"child-2","state":{"state":"idle"}}}`,
	} {
		if _, err := tr.UpdateJSON(id, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, f := range tr.Lost("acp-1") {
		if f.Payload.Status != "unknown" || f.ToolStatus != "" || !f.EndedAt.IsZero() {
			t.Errorf("%s: status %q tool %q end %v; want unknown only", f.ToolCallID, f.Payload.Status, f.ToolStatus,
				f.EndedAt)
		}
		got = append(got, f.ToolCallID)
	}
	if want := []string{"delegate_1", "toolu_bg", "toolu_open"}; !slices.Equal(got, want) {
		t.Errorf("Lost marked %v, want %v", got, want)
	}
	if other := tr.Lost("acp-2"); len(other) != 0 {
		t.Errorf("another session's Lost marked %d rows", len(other))
	}
}
