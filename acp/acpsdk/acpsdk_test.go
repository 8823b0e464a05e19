package acpsdk_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/acp/acpsdk"
	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
)

// client is a host's ACP client that does nothing with what it receives.
type client struct {
	sdk.Client
	mu      sync.Mutex
	updates int
}

func (*client) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
}

func (c *client) SessionUpdate(context.Context, sdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates++
	return nil
}

// A Claude Code subagent call whose token count is 2^53 + 1: a float64
// cannot hold it.
const bigTokens = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"cl-1","update":{` +
	`"sessionUpdate":"tool_call","toolCallId":"toolu_big","title":"Task","status":"completed",` +
	`"rawInput":{"description":"a very long run","subagent_type":"general-purpose"},` +
	`"_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"totalTokens":9007199254740993}}}}}}`

// TestTapThroughTheSDK: an agent's traffic read by a real
// ClientSideConnection through acp.Tap reaches the tracker whole: Cursor's
// cursor/task requests — which name no ACP session, and which the SDK
// answers with "method not found" instead of handing them to the host —
// give their rows the agent id, description and model, before or after
// their tool call; integers arrive to the last digit; the host's client
// still receives every notification.
func TestTapThroughTheSDK(t *testing.T) {
	store := memory.New()
	rec, err := core.NewRecorder(store)
	if err != nil {
		t.Fatal(err)
	}
	tr := acp.NewTracker()
	identity := func(string) acp.Identity {
		return acp.Identity{TaskSessionID: "host-s", TaskID: "host-t", ExecutionID: "exec"}
	}
	ctx := context.Background()
	fromAgentR, fromAgentW := io.Pipe()
	toAgentR, toAgentW := io.Pipe()
	host := &client{}
	sdk.NewClientSideConnection(host, toAgentW, acp.Tap(fromAgentR, tr, identity, func(f core.Frame) {
		rec.Record(ctx, f)
	}))
	answers := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(toAgentR)
		for sc.Scan() {
			answers <- sc.Text()
		}
		close(answers)
	}()
	traffic, err := os.ReadFile("../testdata/cursor.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(fromAgentW, string(traffic)+bigTokens+"\n"); err != nil {
		t.Fatal(err)
	}
	// The SDK answers the cursor/task requests (ids 12 and 13) with
	// method-not-found, and the permission request (14).
	for range 3 {
		select {
		case a := <-answers:
			cursorTask := strings.Contains(a, `"id":12`) || strings.Contains(a, `"id":13`)
			if cursorTask && !strings.Contains(a, `"code":-32601`) {
				t.Errorf("the SDK answered cursor/task with %s, not method-not-found: the tap is no longer needed", a)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the SDK did not answer the agent's requests")
		}
	}
	fromAgentW.Close()
	want := map[string]string{
		"tc_1":      "agent=bc-1 model=gpt-5 desc=Refactor the parser",
		"tc_2":      "agent=bc-2 model=claude-4-sonnet desc=Write the changelog",
		"toolu_big": "tokens=9007199254740993",
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := store.ListBySession(ctx, "host-s", core.Page{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range rows {
			if r.TotalTokens != nil {
				got[r.ToolCallID] = "tokens=" + strconv.FormatInt(*r.TotalTokens, 10)
				continue
			}
			got[r.ToolCallID] = "agent=" + str(r.AgentID) + " model=" + str(r.Model) + " desc=" + str(r.Description)
		}
		if len(got) == len(want) || time.Now().After(deadline) {
			for k, w := range want {
				if got[k] != w {
					t.Errorf("%s: %q, want %q", k, got[k], w)
				}
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		host.mu.Lock()
		n := host.updates
		host.mu.Unlock()
		if n == 6 || time.Now().After(deadline) {
			if n != 6 {
				t.Errorf("the host's client received %d notifications, want the 6 sent", n)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTypedPathRoundsAboveFloat64: the typed path reads what the SDK
// decoded, so an integer past 2^53 arrives rounded (documented; Tap and
// Line are exact).
func TestTypedPathRoundsAboveFloat64(t *testing.T) {
	var msg struct {
		Params sdk.SessionNotification `json:"params"`
	}
	if err := json.Unmarshal([]byte(bigTokens), &msg); err != nil {
		t.Fatal(err)
	}
	id := acp.Identity{TaskSessionID: "s", TaskID: "t", ExecutionID: "e"}
	typed, err := acpsdk.Update(acp.NewTracker(), id, msg.Params)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := acp.NewTracker().Line(id, []byte(bigTokens))
	if err != nil {
		t.Fatal(err)
	}
	if len(typed) != 1 || len(raw) != 1 || raw[0].Payload.TotalTokens != 9007199254740993 ||
		typed[0].Payload.TotalTokens != 9007199254740992 {
		t.Errorf("typed %+v raw %+v", typed, raw)
	}
}

func str(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}
