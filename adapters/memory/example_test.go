package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
)

// A host's unit test records the frames its stream handler would see and
// asserts on what was stored, with no database.
func Example() {
	store := memory.New()
	rec, err := core.NewRecorder(store)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	frame := core.Frame{TaskSessionID: "sess-1", TaskID: "task-1", TurnID: "turn-1", ExecutionID: "exec-1",
		ToolCallID: "toolu_01", ToolStatus: "in_progress", ObservedAt: t0,
		Payload: &core.Payload{
			SubagentType: "security-reviewer",
			Description:  "review auth",
			Status:       "async_launched",
			IsAsync:      true,
		}}
	rec.Record(ctx, frame)
	frame.ToolStatus, frame.ObservedAt = "completed", t0.Add(time.Minute)
	rec.Record(ctx, frame)

	rows, _ := store.ListBySession(ctx, "sess-1", core.Page{})
	r := rows[0]
	fmt.Println(len(rows), *r.SubagentType, *r.ToolStatus, r.SettledAt.Format(time.TimeOnly), r.TotalTokens == nil)
	v := rec.Counters().Values()
	fmt.Printf("attempted %d, persisted %d, failed %d, pending %d\n", v.Attempted, v.Persisted, v.Failed, v.Pending)
	// Output:
	// 1 security-reviewer completed 09:01:00 true
	// attempted 2, persisted 2, failed 0, pending 0
}

// An export streams every row, by session then id, resumable after the
// last row printed; what subagentctl export prints and import loads.
func ExampleStore_Export() {
	store := memory.New()
	rec, _ := core.NewRecorder(store)
	ctx := context.Background()
	for _, s := range []string{"sess-2", "sess-1"} {
		rec.Record(ctx, core.Frame{TaskSessionID: s, TaskID: "task-1", ExecutionID: "exec-1", ToolCallID: "toolu_1",
			ToolStatus: "completed"})
	}
	for row, err := range store.Export(ctx, report.ExportQuery{}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(row.TaskSessionID, row.ToolCallID, *row.ToolStatus)
	}
	// Output:
	// sess-1 toolu_1 completed
	// sess-2 toolu_1 completed
}
