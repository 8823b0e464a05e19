package hosttest

import (
	"context"
	"slices"
	"testing"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
)

func TestHandlerRecordsSubagentsOnly(t *testing.T) {
	// README: unit
	store := memory.New() // written synchronously: rows are readable right after Record
	rec, err := core.NewRecorder(store)
	if err != nil {
		t.Fatal(err)
	}
	// README: end
	h := &Handler{Rec: rec}
	ctx := context.Background()
	h.Handle(ctx, ToolCallEvent{SessionID: "s", TaskID: "t", TurnID: "turn", ToolCallID: "c1", Kind: "execute"})
	h.Handle(ctx, ToolCallEvent{SessionID: "s", TaskID: "t", TurnID: "turn", ToolCallID: "c2", Kind: "subagent_task",
		Status: "completed", Subagent: &core.Payload{SubagentType: "explorer", Status: "async_launched", IsAsync: true}})

	rows, err := store.ListBySession(ctx, "s", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ToolCallID != "c2" || !rows[0].IsAsync || rows[0].TotalTokens != nil ||
		rows[0].SettledAt == nil {
		t.Fatalf("rows = %+v", rows)
	}
	if v := rec.Counters().Values(); v.Persisted != 1 || v.UnknownExecution != 1 {
		t.Errorf("counters = %+v", v)
	}
}

// TestTerminalStatusesAreTheLibrarys: the host's statuses that end a call
// are the ones that settle a row.
func TestTerminalStatusesAreTheLibrarys(t *testing.T) {
	got, want := slices.Clone(terminalStatuses), core.TerminalToolStatuses()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the host's terminal statuses %v, the library's %v", got, want)
	}
}
