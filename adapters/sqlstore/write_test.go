package sqlstore

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
)

// TestAbsorbers: only a row that names an execution and is the first of
// its key in the write may absorb its pair's history; the pair's rows that
// may are absorbed before the write's upserts unless a row of the pair
// naming no execution, or an earlier row of another key holding one's id,
// comes before one of them — then each absorbs in a statement of its own.
func TestAbsorbers(t *testing.T) {
	r := func(tool, exec, id string) core.Subagent {
		return core.Subagent{TaskSessionID: "s", ToolCallID: tool, AgentExecutionID: exec, ID: id}
	}
	rows := []core.Subagent{
		r("a", "e1", "1"), r("a", "e1", "2"), // a key's first row only
		r("b", "e1", "3"), r("b", "e2", "4"), // two executions: the statement picks the first that may
		r("c", core.UnknownExecution, "5"), r("c", "e1", "6"), // 'unknown' merges into history first
		r("d", "e1", "7"), r("e", "e1", "7"), // e's id is d's: taken, or not, by d's insert
		r("f", core.UnknownExecution, "8"), // absorbs nothing
		r("c", "e2", "9"),
	}
	todo := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	first, own := absorbers(rows, todo)
	if want := []int{0, 2, 3, 6}; !slices.Equal(first, want) {
		t.Errorf("absorbed first: %v, want %v", first, want)
	}
	if want := []int{5, 7, 9}; !slices.Equal(own, want) {
		t.Errorf("absorbed on their own: %v, want %v", own, want)
	}
	// Of a part of the write (a refused row taken out), positions in it.
	first, own = absorbers(rows, []int{5, 6, 7, 9})
	if !slices.Equal(first, []int{0, 1, 3}) || !slices.Equal(own, []int{2}) {
		t.Errorf("of rows 5, 6, 7 and 9: first %v, own %v; want [0 1 3] and [2]", first, own)
	}
}

// TestWriteStatements: the absorbing statements, each between the
// planner's settings and their restoring, come before the upserts they
// serve — the pairs absorbed first before every upsert, after the locks
// of the write's pairs where it has more than one row, a row absorbing
// on its own just before its upsert — each row by the lean upsert unless it
// reports a sparse column — and a failed statement is charged to the row
// it writes, or to none (an absorbing one marked errAbsorbing).
func TestWriteStatements(t *testing.T) {
	absorb := &sqldialect.Absorbing{Statement: "ABSORB", Plan: "PLAN", Lock: "LOCK", Restore: "RESTORE"}
	s := &Store{form: sqldialect.UpsertForm{Statement: "UPSERT", Absorb: absorb},
		lean: sqldialect.UpsertForm{Statement: "LEAN"}}
	r := func(tool, exec string) core.Subagent {
		return core.Subagent{TaskSessionID: "s", ToolCallID: tool, AgentExecutionID: exec, ID: tool + exec}
	}
	rows := []core.Subagent{r("a", "e1"), r("b", core.UnknownExecution), r("b", "e1"), r("c", "e1")}
	requests := int64(3)
	rows[3].Requests = &requests
	stmts, of := s.writeStatements(rows, []int{0, 1, 2, 3}, true, time.Time{})
	var got []string
	for _, st := range stmts {
		got = append(got, st.SQL)
	}
	want := []string{"LOCK", "PLAN", "ABSORB", "RESTORE", "LEAN", "LEAN", "PLAN", "ABSORB", "RESTORE", "LEAN", "UPSERT"}
	if !slices.Equal(got, want) || !slices.Equal(of, []int{-1, -1, -1, -1, 0, 1, -1, -1, -1, 2, 3}) {
		t.Fatalf("statements %v of rows %v", got, of)
	}
	if a := stmts[0].Args; !slices.Equal(a[0].([]string), []string{"s", "s", "s", "s"}) ||
		!slices.Equal(a[1].([]string), []string{"a", "b", "b", "c"}) {
		t.Errorf("the pairs' locks' arguments, every row's pair: %v", a)
	}
	if a := stmts[2].Args; !slices.Equal(a[0].([]string), []string{"s", "s"}) ||
		!slices.Equal(a[1].([]string), []string{"a", "c"}) || !slices.Equal(a[3].([]string), []string{"ae1", "ce1"}) {
		t.Errorf("the first absorbing's arguments: %v", a)
	}
	if a := stmts[7].Args; !slices.Equal(a[1].([]string), []string{"b"}) ||
		!slices.Equal(a[2].([]string), []string{"e1"}) {
		t.Errorf("row 2's own absorbing's arguments: %v", a)
	}
	if stmts, _ := s.writeStatements(rows, []int{0}, true, time.Time{}); len(stmts) != 4 || stmts[1].SQL != "ABSORB" {
		t.Errorf("a write of one row takes no pair's lock: %v", stmts)
	}
	if stmts, _ := s.writeStatements(rows, []int{0, 1, 2, 3}, false, time.Time{}); len(stmts) != 4 {
		t.Errorf("not absorbing (a sharded table): %d statements, want the 4 upserts", len(stmts))
	}
	boom := errors.New("boom")
	for _, c := range []struct {
		at, row   int
		absorbing bool
	}{{0, -1, false}, {1, -1, false}, {2, -1, true}, {4, 0, false}, {7, -1, true}, {10, 3, false}, {-1, -1, false}} {
		row, err := s.fault(stmts, of, c.at, boom)
		if row != c.row || !errors.Is(err, boom) || errors.Is(err, errAbsorbing) != c.absorbing {
			t.Errorf("statement %d failed: row %d, %v; want row %d, absorbing %v", c.at, row, err, c.row, c.absorbing)
		}
	}
}
