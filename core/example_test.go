package core_test

import (
	"context"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
)

// A stream handler hands each subagent frame to the recorder, which
// queues it and returns at once; the store merges the frames of one
// invocation into one row.
func ExampleNewRecorder() {
	store := memory.New() // the host's store: sqlite.New, postgres.New, auto.New
	rec, err := core.NewRecorder(store)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	at := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	launch := core.Frame{TaskSessionID: "sess-1", TaskID: "task-1", ExecutionID: "exec-1", ToolCallID: "toolu_1",
		ToolStatus: "in_progress", ObservedAt: at, Payload: &core.Payload{SubagentType: "explorer"}}
	done := launch
	done.ToolStatus, done.ObservedAt = "completed", at.Add(time.Minute)
	done.Payload = &core.Payload{TotalTokens: 51234}
	rec.Record(ctx, done) // out of order: the completion first
	rec.Record(ctx, launch)
	if err := rec.Close(ctx); err != nil {
		panic(err)
	}

	// One row; observed_at is when a frame of it was first seen — the
	// completion's, here — never a start time.
	rows, _ := store.ListBySession(ctx, "sess-1", core.Page{})
	r := rows[0]
	fmt.Println(len(rows), *r.SubagentType, *r.ToolStatus, *r.TotalTokens, r.ObservedAt.Format(time.TimeOnly))
	// Output: 1 explorer completed 51234 09:01:00
}

// Normalize is what the recorder does to each frame before it is
// written: the row it becomes, and what was odd about it.
func ExampleNormalize() {
	row, v := core.Normalize(core.Frame{TaskSessionID: "sess-1", TaskID: "task-1", ToolCallID: "toolu_1",
		ToolStatus: "completed", ObservedAt: time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC),
		Payload: &core.Payload{TotalTokens: -5, DurationMs: 1200}})
	fmt.Println(row.AgentExecutionID, row.TotalTokens == nil, *row.DurationMs, row.SettledAt != nil)
	fmt.Println(v.UnknownExecution, v.Anomalous)
	// Output:
	// unknown true 1200 true
	// true true
}

// DecodeFrame reads the JSON line subagentctl record reads; a field it
// does not know is an error, not a value lost without a word.
func ExampleDecodeFrame() {
	f, err := core.DecodeFrame([]byte(`{"task_session_id":"sess-1","task_id":"task-1","tool_call_id":"toolu_1",
		"tool_status":"completed","observed_at":"2026-08-12T09:00:00Z","subagent_task":{"subagent_type":"explorer"}}`))
	fmt.Println(f.ToolCallID, f.Payload.SubagentType, err)
	_, err = core.DecodeFrame([]byte(`{"task_sesion_id":"sess-1"}`))
	fmt.Println(err != nil)
	// Output:
	// toolu_1 explorer <nil>
	// true
}
