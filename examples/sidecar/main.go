// Command sidecar is a host's ACP sidecar with no database, as the
// reference host runs one: it sits on the agent's streams and hands its
// UI, for each subagent the tracker recognises, a card — the frame with
// the content the UI shows (prompt, result text, output file and whether
// it can be read) — and answers a card's current state by ACP session and
// tool call id. Nothing is recorded: the record's columns are the same
// frames a recorder would write.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/core"
)

// README: sidecar
// Sidecar connects to an agent with the tracker on both of its streams and
// sends each recognised subagent's card — the call as the tracker holds
// it now, its content filled — to cards (the host's UI), keyed by its ACP
// session; Tracker.Current answers a card's state later.
func Sidecar(
	client sdk.Client, agentStdin io.Writer, agentStdout io.Reader, identity func(acpSession string) acp.Identity,
	readable func(path string) bool, cards func(acpSession string, card core.Frame),
) (*sdk.ClientSideConnection, *acp.Tracker) {
	tracker := acp.NewTracker(acp.WithContent(readable))
	show := func(c acp.Card) { cards(c.ACPSession, c.Current) }
	return sdk.NewClientSideConnection(client, acp.TapWrites(agentStdin, tracker),
		acp.TapCards(agentStdout, tracker, identity, show)), tracker
}

// README: end

// client stands for the host's own ACP client (its UI, files, terminals).
type client struct{ sdk.Client }

func (client) SessionUpdate(context.Context, sdk.SessionNotification) error { return nil }

// readable is the host's check that an output file can be read.
func readable(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	return f.Close() == nil
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run feeds a recorded async subagent launch through Sidecar and prints
// the cards.
func run(w io.Writer) error {
	agentOut, fromAgent := io.Pipe()
	toAgent, agentIn := io.Pipe()
	go io.Copy(io.Discard, toAgent) // the SDK's answers to the agent
	cards := make(chan core.Frame, 16)
	Sidecar(client{}, agentIn, agentOut, func(string) acp.Identity {
		return acp.Identity{TaskSessionID: "session-1", TaskID: "task-1", TurnID: "turn-1", ExecutionID: "exec-1"}
	}, readable, func(_ string, f core.Frame) { cards <- f })
	go func() {
		io.WriteString(fromAgent, strings.Join(traffic, "\n")+"\n")
		fromAgent.Close()
	}()
	for range traffic {
		f := <-cards
		p := f.Payload
		fmt.Fprintf(w, "%s %s %q prompt=%q result=%q output=%s readable=%v async=%v\n", f.ToolCallID, f.ToolStatus,
			p.Description, p.Prompt, p.ResultText, p.OutputFile, p.CanReadOutputFile, p.IsAsync)
	}
	return nil
}

// traffic is Claude Code's async subagent launch, as claude-agent-acp
// sends it.
var traffic = []string{
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-1","update":{"sessionUpdate":"tool_call",` +
		`"toolCallId":"toolu_agent","title":"Task","status":"pending","rawInput":{"description":"Background review",` +
		`"prompt":"Review the diff","subagent_type":"general-purpose"},"_meta":{"claudeCode":{"toolName":"Agent"}}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-1","update":{"sessionUpdate":` +
		`"tool_call_update","toolCallId":"toolu_agent","status":"completed","rawOutput":"Async agent launched ` +
		`successfully.","_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"agentId":"a2","isAsync":true,` +
		`"outputFile":"/tmp/tasks/a2.output","prompt":"Review the diff","status":"async_launched"}}}}}}`,
}
