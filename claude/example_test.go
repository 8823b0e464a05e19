package claude_test

import (
	"context"
	"fmt"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/claude"
	"github.com/subagentctx/subagentctx/core"
)

// A host that runs Claude Code through the Agent SDK passes each message
// line of a session's stream to one Stream and records the frames: a
// background subagent's launch settles its tool call, and its
// task_notification, later, is the agent's end.
func ExampleStream_SDK() {
	ctx := context.Background()
	store := memory.New()
	rec, _ := core.NewRecorder(store)
	defer rec.Close(ctx)

	stream := claude.NewStream()
	id := claude.Identity{TaskSessionID: "sess-1", TaskID: "task-1", ExecutionID: "exec-1"}
	for _, line := range []string{
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Agent",` +
			`"input":{"description":"Review the diff","subagent_type":"code-reviewer"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1"}]},` +
			`"tool_use_result":{"status":"async_launched","isAsync":true,"agentId":"a1"}}`,
		`{"type":"system","subtype":"task_notification","task_id":"a1","status":"failed"}`,
	} {
		frames, err := stream.SDK(id, []byte(line))
		if err != nil {
			fmt.Println("bad line:", err)
			continue
		}
		for _, f := range frames {
			rec.Record(ctx, f)
		}
	}
	rows, _ := store.ListBySession(ctx, "sess-1", core.Page{})
	r := rows[0]
	fmt.Println(*r.ToolStatus, *r.AgentStatus, r.IsAsync, r.EndedAt != nil)
	// Output: completed failed true true
}
