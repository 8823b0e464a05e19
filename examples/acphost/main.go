// Command acphost is a host that speaks the Agent Client Protocol: its ACP
// client sees the agent's session/update notifications, and hands them to
// an acp.Tracker as well, whose frames go to the Recorder. Here a recorded
// Claude Code turn stands in for the agent at the other end of the
// connection:
//
//	go -C examples run ./acphost
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/acp/acpsdk"
	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
)

// README: recording
// RecordingClient is the host's ACP client with recording added: each
// session/update reaches the host's own handler, and the tracker, whose
// frames go to the Recorder (which never waits on the database).
type RecordingClient struct {
	sdk.Client // the host's own client: files, terminals, permissions, its UI
	Tracker    *acp.Tracker
	Recorder   *core.Recorder
	// Identity maps an ACP session to the host's ids for its current turn
	// (ACP carries no task session, task, turn or execution id).
	Identity func(acpSession sdk.SessionId) acp.Identity
}

// SessionUpdate implements sdk.Client.
func (c *RecordingClient) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	frames, err := acpsdk.Update(c.Tracker, c.Identity(n.SessionId), n)
	if err != nil {
		return err
	}
	for _, f := range frames {
		c.Recorder.Record(ctx, f)
	}
	return c.Client.SessionUpdate(ctx, n)
}

// LoadSession resumes an ACP session through the agent: the agent
// replays the session's history as session/update notifications before
// it answers, and the tracker records none of them (those invocations are
// on record already, under the execution that ran them). The SDK hands
// every notification sent before the response to SessionUpdate before
// LoadSession returns, so the replay ends exactly there.
func (c *RecordingClient) LoadSession(
	ctx context.Context, agent *sdk.ClientSideConnection, req sdk.LoadSessionRequest,
) (sdk.LoadSessionResponse, error) {
	c.Tracker.Replay(string(req.SessionId), true)
	defer c.Tracker.Replay(string(req.SessionId), false)
	return agent.LoadSession(ctx, req)
}

// README: end

// README: tap
// Connect is the host's connection to an agent process with the tracker
// on both streams instead: every line the agent writes reaches the tracker
// as written — Cursor's cursor/task requests included, which the SDK
// answers itself and never hands over, and integers past 2^53 — and then
// the SDK; every line the host writes to the agent reaches it too, so a
// session/load request gates the history the agent replays. The host's
// client then records nothing itself, and wraps nothing.
func Connect(
	client sdk.Client, agentStdin io.Writer, agentStdout io.Reader, tracker *acp.Tracker, rec *core.Recorder,
	identity func(acpSession string) acp.Identity,
) *sdk.ClientSideConnection {
	record := func(f core.Frame) { rec.Record(context.Background(), f) }
	return sdk.NewClientSideConnection(client, acp.TapWrites(agentStdin, tracker),
		acp.Tap(agentStdout, tracker, identity, record))
}

// README: end

// hostClient stands for the host's existing client; only its
// SessionUpdate is exercised here.
type hostClient struct {
	sdk.Client
	messages int
}

func (h *hostClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	if n.Update.AgentMessageChunk != nil {
		h.messages++
	}
	return nil
}

//go:embed turn.jsonl
var turn []byte

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer) error {
	store := memory.New()
	rec, err := core.NewRecorder(store)
	if err != nil {
		return err
	}
	host := &hostClient{}
	client := &RecordingClient{Client: host, Tracker: acp.NewTracker(), Recorder: rec,
		Identity: func(sdk.SessionId) acp.Identity {
			return acp.Identity{TaskSessionID: "session-1", TaskID: "task-1", TurnID: "turn-1", ExecutionID: "exec-1"}
		}}
	// The connection would call SessionUpdate for each notification the
	// agent sends; the recorded turn is replayed through the same method.
	sc := bufio.NewScanner(bytes.NewReader(turn))
	for sc.Scan() {
		var msg struct {
			Params sdk.SessionNotification `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			return err
		}
		if err := client.SessionUpdate(ctx, msg.Params); err != nil {
			return err
		}
	}
	client.Tracker.EndTurn("acp-claude") // the prompt turn ended: release its finished calls
	if err := rec.Close(ctx); err != nil {
		return err
	}
	rows, err := store.ListBySession(ctx, "session-1", core.Page{})
	if err != nil {
		return err
	}
	fmt.Fprintf(
		w, "%d agent message chunk(s) shown to the user; %d subagent row(s) recorded:\n", host.messages, len(rows),
	)
	for _, r := range rows {
		parent := "-"
		if r.ParentToolCallID != nil {
			parent = *r.ParentToolCallID
		}
		fmt.Fprintf(
			w, "  %s %s parent=%s tool_status=%s settled=%v async=%v\n", r.ToolCallID, *r.SubagentType, parent, *r.ToolStatus,
			r.SettledAt != nil, r.IsAsync,
		)
	}
	fmt.Fprintf(w, "%+v\n", rec.Counters().Values())
	return nil
}
