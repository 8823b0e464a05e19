package sqlstore

import (
	"fmt"
	"slices"
	"testing"

	"github.com/subagentctx/subagentctx/core"
)

// TestWaves: wave k holds each pair's k-th row in the batch's order (two
// executions of one pair are two rows of that pair), and a wave longer
// than maxWave is split, its parts before the next wave.
func TestWaves(t *testing.T) {
	r := func(s, tool, exec string) core.Subagent {
		return core.Subagent{TaskSessionID: s, ToolCallID: tool, AgentExecutionID: exec}
	}
	rows := []core.Subagent{
		r("s1", "a", "e1"), r("s1", "b", "e1"), r("s1", "a", "e2"), r("s2", "a", "e1"), r("s1", "a", "e1"),
		r("s1", "b", "e1"),
	}
	got := waves(rows, []int{0, 1, 2, 3, 4, 5})
	if want := [][]int{{0, 1, 3}, {2, 5}, {4}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("waves %v, want %v", got, want)
	}
	if got := waves(rows, []int{1, 4, 5}); !slices.EqualFunc(got, [][]int{{1, 4}, {5}}, slices.Equal) {
		t.Errorf("waves of a part of the batch %v, want [[1 4] [5]]", got)
	}
	many := make([]core.Subagent, maxWave+5)
	todo := make([]int, len(many))
	for i := range many {
		many[i], todo[i] = r("s", fmt.Sprint("t", i%(maxWave+3)), "e"), i // pairs t0, t1 recur at the end
	}
	got = waves(many, todo)
	if len(got) != 3 || len(got[0]) != maxWave || !slices.Equal(got[1], []int{maxWave, maxWave + 1, maxWave + 2}) ||
		!slices.Equal(got[2], []int{maxWave + 3, maxWave + 4}) {
		t.Errorf("a long wave split into %d waves of %v rows", len(got), lens(got))
	}
}

func lens(w [][]int) []int {
	out := make([]int, len(w))
	for i, x := range w {
		out[i] = len(x)
	}
	return out
}
