package report_test

import (
	"context"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
)

// Every store reads its record back the same way: here the statistics of
// a session, two subagents of one turn, one of them with its usage.
func ExampleReader() {
	store := memory.New()
	rec, _ := core.NewRecorder(store)
	ctx := context.Background()
	at := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	for i, tokens := range []int64{51234, 0} {
		rec.Record(ctx, core.Frame{TaskSessionID: "sess-1", TaskID: "task-1", TurnID: "turn-1", ExecutionID: "exec-1",
			ToolCallID: fmt.Sprint("toolu_", i), ToolStatus: "completed", ObservedAt: at,
			Payload: &core.Payload{SubagentType: "explorer", TotalTokens: tokens}})
	}
	rec.Close(ctx)

	var r report.Reader = store
	st, err := r.Stats(ctx, report.StatsQuery{TaskSessionID: "sess-1"})
	if err != nil {
		panic(err)
	}
	fmt.Println(st.Subagents, st.FanOutPerTurn[0].Subagents, st.TotalTokens.All.Reported, st.TotalTokens.All.Sum)
	// Output: 2 2 1 51234
}
