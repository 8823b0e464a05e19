// Package fanout arranges a session's rows as the fan-out they record: per
// turn, each subagent with the nested subagents it launched under it. The
// command line's tree and the web view draw the same arrangement.
package fanout

import (
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
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
// row, and nests each row under its parent as report.Parents resolves it
// (wherever that row's turn is), across the seam between history and live
// capture. A row whose
// parent is not among the rows is a root of its own turn; so is the first
// row (in row order) of a cycle of parent links, which no tree can hold.
// Linear in the rows: a chain of thirty thousand nests as fast as a flat
// turn.
func Build(rows []core.Subagent) []Turn {
	nodes := make([]*Node, len(rows))
	for i, r := range rows {
		nodes[i] = &Node{Row: r}
	}
	parent := report.Parents(rows)
	// Whatever no root reaches is on a cycle, or below one: its first row
	// becomes a root, cutting the link that closed the cycle.
	reached := make([]bool, len(rows))
	children := make([][]int, len(rows))
	for i, p := range parent {
		if p >= 0 {
			children[p] = append(children[p], i)
		}
	}
	mark := func(root int) {
		stack := []int{root}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if reached[i] {
				continue
			}
			reached[i] = true
			stack = append(stack, children[i]...)
		}
	}
	for i, p := range parent {
		if p < 0 {
			mark(i)
		}
	}
	for i := range parent {
		if !reached[i] {
			parent[i] = -1
			mark(i)
		}
	}
	var turns []Turn
	index := map[string]int{}
	for i, n := range nodes {
		if p := parent[i]; p >= 0 {
			nodes[p].Children = append(nodes[p].Children, n)
			continue
		}
		turn := ""
		if t := n.Row.TurnID; t != nil {
			turn = *t
		}
		k, ok := index[turn]
		if !ok {
			k = len(turns)
			index[turn] = k
			turns = append(turns, Turn{TurnID: turn})
		}
		turns[k].Roots = append(turns[k].Roots, n)
	}
	for i := range turns {
		for _, root := range turns[i].Roots {
			turns[i].Count += count(root)
		}
	}
	return turns
}

// count sets the depth of root's subtree and returns its size, without
// recursion (a chain may be as long as the rows).
func count(root *Node) int {
	total := 0
	stack := []*Node{root}
	root.Depth = 0
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		total++
		for _, c := range n.Children {
			c.Depth = n.Depth + 1
			stack = append(stack, c)
		}
	}
	return total
}
