package fanout_test

import (
	"fmt"
	"testing"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/fanout"
)

func row(tool, parent, turn string) core.Subagent {
	r := core.Subagent{TaskSessionID: "s", AgentExecutionID: "e", ToolCallID: tool}
	if parent != "" {
		r.ParentToolCallID = &parent
	}
	if turn != "" {
		r.TurnID = &turn
	}
	return r
}

// TestChainNests: a chain of thirty thousand subagents, each launched by
// the one before, nests at depth i (the arrangement is linear in the
// rows, so this runs in milliseconds where the quadratic one took seconds).
func TestChainNests(t *testing.T) {
	const n = 30000
	rows := make([]core.Subagent, n)
	for i := range rows {
		parent := ""
		if i > 0 {
			parent = fmt.Sprint("t", i-1)
		}
		rows[i] = row(fmt.Sprint("t", i), parent, "turn")
	}
	turns := fanout.Build(rows)
	if len(turns) != 1 || turns[0].Count != n || len(turns[0].Roots) != 1 {
		t.Fatalf("turns %d, count %d", len(turns), turns[0].Count)
	}
	node, depth := turns[0].Roots[0], 0
	for len(node.Children) == 1 {
		node, depth = node.Children[0], depth+1
		if node.Depth != depth {
			t.Fatalf("node %s at depth %d, want %d", node.Row.ToolCallID, node.Depth, depth)
		}
	}
	if depth != n-1 {
		t.Errorf("the chain ends at depth %d, want %d", depth, n-1)
	}
}

// TestCycleBroken: parent links that close a cycle cannot all hold: the
// cycle's first row becomes a root and the rest nest under it; a row whose
// parent is elsewhere is a root of its own turn; nothing is lost.
func TestCycleBroken(t *testing.T) {
	rows := []core.Subagent{
		row("a", "c", "t1"), row("b", "a", "t1"), row("c", "b", "t2"), // a → b → c → a
		row("d", "gone", "t2"), row("e", "e", "t1"), // a parent not on record; its own parent
	}
	turns := fanout.Build(rows)
	total := 0
	for _, tr := range turns {
		total += tr.Count
	}
	if total != len(rows) {
		t.Fatalf("%d rows arranged of %d", total, len(rows))
	}
	if turns[0].TurnID != "t1" || len(turns[0].Roots) != 2 || turns[0].Roots[0].Row.ToolCallID != "a" ||
		turns[0].Roots[0].Children[0].Row.ToolCallID != "b" ||
		turns[0].Roots[0].Children[0].Children[0].Row.ToolCallID != "c" {
		t.Errorf("the cycle: %+v", turns)
	}
}
