// Package fanout arranges a session's rows as the fan-out they record: per
// turn, each subagent with the nested subagents it launched under it. The
// command line's tree and the web view draw the same arrangement.
package fanout

import (
	"github.com/subagentctx/subagentctx/core"
)

// Turn is one turn's subagents; TurnID "" holds the rows without a turn.
type Turn struct {
	TurnID string
	Count  int
	Roots  []*Node
}

// Node is one subagent and the subagents nested under it.
type Node struct {
	Row      core.Subagent
	Children []*Node
	Depth    int
}

// Build groups rows (in AC-13 order) by turn, in order of each turn's first
// row, and nests each row under the row of its parent tool call id in the
// same session and execution (wherever that row's turn is). A row whose
// parent is not among the rows is a root of its own turn.
func Build(rows []core.Subagent) []Turn {
	nodes := make([]*Node, len(rows))
	byKey := map[core.RowKey]*Node{}
	for i, r := range rows {
		nodes[i] = &Node{Row: r}
		byKey[r.Key()] = nodes[i]
	}
	var turns []Turn
	index := map[string]int{}
	for _, n := range nodes {
		r := n.Row
		if p := r.ParentToolCallID; p != nil {
			parent := byKey[core.RowKey{TaskSessionID: r.TaskSessionID, AgentExecutionID: r.AgentExecutionID, ToolCallID: *p}]
			if parent != nil && parent != n && !descends(parent, n) {
				parent.Children = append(parent.Children, n)
				continue
			}
		}
		turn := ""
		if r.TurnID != nil {
			turn = *r.TurnID
		}
		i, ok := index[turn]
		if !ok {
			i = len(turns)
			index[turn] = i
			turns = append(turns, Turn{TurnID: turn})
		}
		turns[i].Roots = append(turns[i].Roots, n)
	}
	for i := range turns {
		for _, root := range turns[i].Roots {
			turns[i].Count += count(root, 0)
		}
	}
	return turns
}

// descends reports whether a is n or nested under it: a parent link that
// would close a cycle is ignored.
func descends(a, n *Node) bool {
	if a == n {
		return true
	}
	for _, c := range n.Children {
		if descends(a, c) {
			return true
		}
	}
	return false
}

func count(n *Node, depth int) int {
	n.Depth = depth
	total := 1
	for _, c := range n.Children {
		total += count(c, depth+1)
	}
	return total
}
