package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
)

func TestACPHost(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"1 agent message chunk(s) shown to the user; 3 subagent row(s) recorded",
		"toolu_01A general-purpose parent=- tool_status=completed settled=true async=false",
		"toolu_01C explorer parent=toolu_01A tool_status=failed settled=true async=false",
		"toolu_02 security-reviewer parent=- tool_status=pending settled=true async=true",
		"Failed:0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// replayAgent answers session/load as an agent does: it replays the
// session's history (two subagent calls) as session/update notifications,
// then answers.
type replayAgent struct {
	sdk.Agent // only LoadSession is called
	conn      *sdk.AgentSideConnection
}

var history = []string{
	`{"sessionId":"acp-resume","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_old1",` +
		`"title":"Find flaky tests","status":"completed",` +
		`"rawInput":{"description":"Find flaky tests","subagent_type":"general-purpose"},` +
		`"_meta":{"claudeCode":{"toolName":"Agent"}}}}`,
	`{"sessionId":"acp-resume","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_old2","title":"Audit auth",` +
		`"status":"completed","rawInput":{"description":"Audit auth","subagent_type":"security-reviewer"},` +
		`"_meta":{"claudeCode":{"toolName":"Agent"}}}}`,
}

const live = `{"sessionId":"acp-resume","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_new1",` +
	`"title":"Fix it","status":"completed","rawInput":{"description":"Fix it","subagent_type":"general-purpose"},` +
	`"_meta":{"claudeCode":{"toolName":"Agent"}}}}`

func notification(t *testing.T, s string) sdk.SessionNotification {
	t.Helper()
	var n sdk.SessionNotification
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (a *replayAgent) LoadSession(ctx context.Context, _ sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	for _, h := range history {
		var n sdk.SessionNotification
		if err := json.Unmarshal([]byte(h), &n); err != nil {
			return sdk.LoadSessionResponse{}, err
		}
		if err := a.conn.SessionUpdate(ctx, n); err != nil {
			return sdk.LoadSessionResponse{}, err
		}
	}
	return sdk.LoadSessionResponse{}, nil
}

// TestLoadSessionRecordsNoReplay: through a real ACP connection, the
// history an agent replays for session/load leaves no row; the live call
// after it does.
func TestLoadSessionRecordsNoReplay(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	rec, err := core.NewRecorder(store)
	if err != nil {
		t.Fatal(err)
	}
	client := &RecordingClient{Client: &hostClient{}, Tracker: acp.NewTracker(), Recorder: rec,
		Identity: func(sdk.SessionId) acp.Identity {
			return acp.Identity{TaskSessionID: "session-2", TaskID: "task-2", TurnID: "turn-1", ExecutionID: "exec-2"}
		}}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	agent := &replayAgent{}
	agent.conn = sdk.NewAgentSideConnection(agent, toClientW, toAgentR)
	conn := sdk.NewClientSideConnection(client, toAgentW, toClientR)
	defer toAgentW.Close()
	defer toClientW.Close()

	if _, err := client.LoadSession(ctx, conn, sdk.LoadSessionRequest{SessionId: "acp-resume", Cwd: "/work",
		McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if err := agent.conn.SessionUpdate(ctx, notification(t, live)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := store.ListBySession(ctx, "session-2", core.Page{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.ToolCallID)
		}
		if len(ids) > 0 || time.Now().After(deadline) {
			if strings.Join(ids, ",") != "toolu_new1" {
				t.Fatalf("rows %v, want the live call alone", ids)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnectTapsCursor: Cursor's traffic through Connect — a real
// ClientSideConnection reading a pipe the agent writes — leaves its rows
// with cursor/task's agent id, description and model.
func TestConnectTapsCursor(t *testing.T) {
	store := memory.New()
	rec, err := core.NewRecorder(store)
	if err != nil {
		t.Fatal(err)
	}
	fromAgentR, fromAgentW := io.Pipe()
	toAgentR, toAgentW := io.Pipe()
	go io.Copy(io.Discard, toAgentR) // the SDK's answers to the agent
	Connect(&hostClient{}, toAgentW, fromAgentR, acp.NewTracker(), rec, func(string) acp.Identity {
		return acp.Identity{TaskSessionID: "session-3", TaskID: "task-3", ExecutionID: "exec-3"}
	})
	traffic := `{"jsonrpc":"2.0","id":12,"method":"cursor/task","params":{"toolCallId":"tc_1","agentId":"bc-1",` +
		`"description":"Refactor the parser","model":"gpt-5","prompt":"Split it."}}` + "\n" +
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"cur-1","update":{` +
		`"sessionUpdate":"tool_call","toolCallId":"tc_1","title":"Task","status":"completed",` +
		`"rawInput":{"_toolName":"Task","subagent_type":"general"}}}}` + "\n"
	if _, err := io.WriteString(fromAgentW, traffic); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := store.ListBySession(context.Background(), "session-3", core.Page{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 || time.Now().After(deadline) {
			if len(rows) != 1 || rows[0].AgentID == nil || *rows[0].AgentID != "bc-1" || *rows[0].Model != "gpt-5" ||
				*rows[0].Description != "Refactor the parser" {
				t.Fatalf("rows %+v", rows)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnectGatesAReplay: a host wired with Connect alone (the tap on
// both streams, no Replay call of its own) runs a session, restarts — a
// new tracker and connection — and resumes it with a plain session/load:
// the history the agent replays leaves no second row; the live call after
// it is recorded.
func TestConnectGatesAReplay(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	rec, err := core.NewRecorder(store)
	if err != nil {
		t.Fatal(err)
	}
	identity := func(string) acp.Identity {
		return acp.Identity{TaskSessionID: "session-4", TaskID: "task-4", TurnID: "turn-1", ExecutionID: "exec-4"}
	}
	run := func(do func(agent *replayAgent, conn *sdk.ClientSideConnection)) {
		toAgentR, toAgentW := io.Pipe()
		toClientR, toClientW := io.Pipe()
		defer toAgentW.Close()
		defer toClientW.Close()
		agent := &replayAgent{}
		agent.conn = sdk.NewAgentSideConnection(agent, toClientW, toAgentR)
		do(agent, Connect(&hostClient{}, toAgentW, toClientR, acp.NewTracker(), rec, identity))
	}
	rows := func(want int) []string {
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := store.ListBySession(ctx, "session-4", core.Page{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.ToolCallID)
			}
			if len(ids) >= want || time.Now().After(deadline) {
				return ids
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	run(func(agent *replayAgent, _ *sdk.ClientSideConnection) { // the first run: the history happens live
		for _, h := range history {
			if err := agent.conn.SessionUpdate(ctx, notification(t, h)); err != nil {
				t.Fatal(err)
			}
		}
		rows(2)
	})
	run(func(agent *replayAgent, conn *sdk.ClientSideConnection) { // after the restart
		if _, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: "acp-resume", Cwd: "/work",
			McpServers: []sdk.McpServer{}}); err != nil {
			t.Fatal(err)
		}
		if err := agent.conn.SessionUpdate(ctx, notification(t, live)); err != nil {
			t.Fatal(err)
		}
		if ids := rows(3); strings.Join(ids, ",") != "toolu_old1,toolu_old2,toolu_new1" {
			t.Errorf("rows %v, want the first run's two and the live call, none twice", ids)
		}
	})
	if v := rec.Counters().Values(); v.Persisted != 3 {
		t.Errorf("counters %+v: the replay was recorded", v)
	}
}
