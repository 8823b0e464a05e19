package acp_test

import (
	"fmt"

	"github.com/subagentctx/subagentctx/acp"
)

// A host that speaks ACP hands the tracker each line of its agent's
// traffic; the tracker recognises Claude Code's subagent tool calls and
// returns the frames they imply, with the host's ids for them.
func ExampleTracker_Line() {
	tr := acp.NewTracker()
	id := acp.Identity{TaskSessionID: "sess-1", TaskID: "task-1", TurnID: "turn-1", ExecutionID: "exec-1"}
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-1","update":{"sessionUpdate":"tool_call",` +
			`"toolCallId":"toolu_1","title":"Task","status":"pending","rawInput":{},` +
			`"_meta":{"claudeCode":{"toolName":"Agent"}}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"acp-1","update":{"sessionUpdate":` +
			`"tool_call_update","toolCallId":"toolu_1","status":"completed","rawInput":{"description":"Find flaky tests",` +
			`"subagent_type":"general-purpose"},"_meta":{"claudeCode":{"toolName":"Agent"}}}}}`,
	} {
		frames, err := tr.Line(id, []byte(line))
		if err != nil {
			panic(err)
		}
		for _, f := range frames {
			fmt.Printf("%s %s %s type=%q description=%q\n", f.TaskSessionID, f.ToolCallID, f.ToolStatus,
				f.Payload.SubagentType, f.Payload.Description)
		}
	}
	// Output:
	// sess-1 toolu_1 pending type="" description=""
	// sess-1 toolu_1 completed type="general-purpose" description="Find flaky tests"
}
