package sqlstore_test

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
	"github.com/subagentctx/subagentctx/internal/testenv"
)

// TestUpsertStatement pins the shape of the one statement: INSERT … ON
// CONFLICT on the three-column key, every stored-row reference qualified,
// the write-once columns absent from the SET list, and UpsertArgs in the
// statement's column order.
func TestUpsertStatement(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", TurnID: "u", ToolCallID: "c", ToolStatus: "completed",
			ObservedAt: time.Now(), Payload: &core.Payload{Model: "m", TotalTokens: 5, IsAsync: true}})
		row.ID = "id"
		s := e.Store.(interface {
			UpsertStatement(core.Subagent) (string, []any, error)
		})
		q, vars, err := s.UpsertStatement(row)
		if err != nil {
			t.Fatal(err)
		}
		norm := strings.ReplaceAll(strings.ReplaceAll(q, `"`, ""), "`", "")
		if !strings.HasPrefix(norm, "INSERT INTO task_session_subagents") ||
			!strings.Contains(norm, "ON CONFLICT (task_session_id,agent_execution_id,tool_call_id) DO UPDATE SET") {
			t.Fatalf("statement: %s", q)
		}
		set := norm[strings.Index(norm, "DO UPDATE SET")+len("DO UPDATE SET"):]
		var assigned []string
		for _, m := range regexp.MustCompile(`(?:^|,)\s*(\w+)=`).FindAllStringSubmatch(set, -1) {
			assigned = append(assigned, m[1])
		}
		want := []string{"turn_id", "parent_tool_call_id", "subagent_type", "description", "agent_id", "child_session_id", "model",
			"agent_status", "total_tokens", "tool_use_count", "duration_ms", "tool_status", "settled_at", "is_async", "updated_at"}
		if !reflect.DeepEqual(assigned, want) { // id, task_id, source, observed_at and the key are write-once
			t.Errorf("SET list assigns %v, want %v", assigned, want)
		}
		if !strings.Contains(set, "COALESCE(task_session_subagents.turn_id, excluded.turn_id)") {
			t.Errorf("stored-row references must be qualified: %s", set)
		}
		if !reflect.DeepEqual(vars, sqlstore.UpsertArgs(row)) {
			t.Errorf("UpsertArgs %v\ndiffers from GORM's %v", sqlstore.UpsertArgs(row), vars)
		}
	})
}
