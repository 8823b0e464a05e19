package sqlstore

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	"github.com/subagentctx/subagentctx/core"
)

// Where the dialect absorbs history by a statement before the upserts
// (UpsertForm.Absorb: PostgreSQL on one server), a write's transaction
// first moves each pair's backfilled row to the execution of the row that
// will absorb it, and that row's upsert then lands on it by its key
// (docs/CONTRACT.md §8.5). Only a row that names an execution and is the
// first of its key in the write can insert a row, so only such a row can
// absorb: the first of its pair's whose own key has no row and whose id
// is not another row's, which the statement checks as it moves history.
//
// A pair's absorbing runs before every upsert of the write unless a row
// of the pair naming no execution comes before one of its rows that may
// absorb (that row merges into history's row by the key 'unknown'), or an
// earlier row of another key holds the id of one of them: then nothing
// written before the absorbing row changes its pair's history, its own
// key or its id's holder, so moving history first leaves what one upsert
// after another would. Any other pair's rows that may absorb each get the
// statement of their own, just before their upsert.
//
// Writers running at once over the same pairs lock rows in one order, so
// that none deadlocks another: a write's rows are upserted by pair
// (byPair), and before absorbing first, a write of more than one pair,
// one with history, locks every stored row it may change in that order
// (Absorbing.Lock) — otherwise it would lock the history of later pairs
// before the rows of earlier ones. Two writes that
// each insert two new executions of one pair, in opposite orders, may
// still deadlock (one is retried): a pair's rows keep their order, which
// decides which execution absorbs.

// errAbsorbing marks a failure of an absorbing statement, which is no
// row's fault but the database's passing state (docs/CONTRACT.md §6.1):
// refused by a key that another transaction inserted meanwhile without
// absorbing (an earlier build's writer), the statement written again
// finds that key's row and leaves history for the repair; refused by a
// table that another process has since sharded, the write is tried again
// as a sharded table's, the store having forgotten where the table is.
var errAbsorbing = errors.New("absorb history")

// writeStatements are the statements of one transaction that writes
// rows[todo…], with, for each, the position in todo of the row it writes
// (-1: none). absorb says whether history is absorbed before the upserts
// (UpsertForm.Absorb, not on a sharded table), each absorbing statement
// between the planner's settings and their restoring.
func (s *Store) writeStatements(rows []core.Subagent, todo []int, absorb bool) (stmts []Statement, of []int) {
	add := func(st Statement, n int) { stmts, of = append(stmts, st), append(of, n) }
	var first, own []int
	if absorb {
		first, own = absorbers(rows, todo)
	}
	absorbing := func(lock bool, at ...int) {
		a := s.form.Absorb
		add(Statement{SQL: a.Plan}, -1)
		if lock {
			add(Statement{SQL: a.TableLock}, -1)
			add(s.locking(rows, todo), -1)
		}
		add(s.absorbing(rows, todo, at), -1)
		add(Statement{SQL: a.Restore}, -1)
	}
	if len(first) > 0 {
		absorbing(!onePair(rows, todo), first...)
	}
	for n, i := range todo {
		if _, ok := slices.BinarySearch(own, n); ok {
			absorbing(false, n)
		}
		_, f, cols := s.upsertOf(&rows[i])
		add(Statement{SQL: f.Statement, Args: upsertArgs(f, cols, &rows[i])}, n)
	}
	return stmts, of
}

// absorbing is the absorbing statement of rows[todo[n]] for each n in at.
func (s *Store) absorbing(rows []core.Subagent, todo []int, at []int) Statement {
	var sessions, tools, executions, ids []string
	for _, n := range at {
		r := &rows[todo[n]]
		sessions, tools = append(sessions, r.TaskSessionID), append(tools, r.ToolCallID)
		executions, ids = append(executions, r.AgentExecutionID), append(ids, r.ID)
	}
	return Statement{SQL: s.form.Absorb.Statement, Args: []any{sessions, tools, executions, ids}}
}

// locking is the statement that locks the stored rows rows[todo…] may
// change, in one order (Absorbing.Lock).
func (s *Store) locking(rows []core.Subagent, todo []int) Statement {
	sessions, executions, tools := make([]string, len(todo)), make([]string, len(todo)), make([]string, len(todo))
	for n, i := range todo {
		sessions[n], executions[n], tools[n] = rows[i].TaskSessionID, rows[i].AgentExecutionID, rows[i].ToolCallID
	}
	return Statement{SQL: s.form.Absorb.Lock, Args: []any{sessions, executions, tools}}
}

// onePair says whether rows[todo…] are all of one pair, which locks
// its rows in the order any other write of it would: history first.
func onePair(rows []core.Subagent, todo []int) bool {
	for _, i := range todo {
		if rows[i].TaskSessionID != rows[todo[0]].TaskSessionID || rows[i].ToolCallID != rows[todo[0]].ToolCallID {
			return false
		}
	}
	return true
}

// byPair orders todo by the rows' pairs — task_session_id, then
// tool_call_id, bytewise, as Absorbing.Lock does — keeping the order in
// which a pair's rows came. Two writes of the same rows then take their
// locks, and insert their keys, in one order. It is the frame-by-frame
// result still (docs/CONTRACT.md AC14): rows of different pairs meet
// only through an id, and where two rows of different keys hold the same
// one, which of them the table refuses depends on their order, so such a
// write keeps the order it came in.
func byPair(rows []core.Subagent, todo []int) {
	holders := make(map[[2]string]core.RowKey, len(todo))
	for _, i := range todo {
		id := [2]string{rows[i].TaskSessionID, rows[i].ID}
		if k, held := holders[id]; held && k != rows[i].Key() {
			return
		}
		holders[id] = rows[i].Key()
	}
	slices.SortStableFunc(todo, func(a, b int) int {
		return cmp.Or(strings.Compare(rows[a].TaskSessionID, rows[b].TaskSessionID),
			strings.Compare(rows[a].ToolCallID, rows[b].ToolCallID))
	})
}

// absorbers are, among rows[todo…], the rows that may absorb history (as
// positions in todo, ascending): first, those whose pair's absorbing runs
// before the write's upserts; own, those that absorb in a statement of
// their own.
func absorbers(rows []core.Subagent, todo []int) (first, own []int) {
	type pair struct{ session, tool string }
	keys := map[core.RowKey]bool{}
	holders := map[[2]string]core.RowKey{} // (session, id): the key of the first row with it
	unnamed := map[pair]bool{}             // a row of the pair naming no execution came
	alone := map[pair]bool{}               // its absorbing cannot run first
	var may []int
	for n, i := range todo {
		r := &rows[i]
		p, k := pair{r.TaskSessionID, r.ToolCallID}, r.Key()
		id := [2]string{r.TaskSessionID, r.ID}
		holder, held := holders[id]
		if !held {
			holders[id] = k
		}
		if r.AgentExecutionID == core.UnknownExecution {
			unnamed[p] = true
			continue
		}
		if keys[k] {
			continue // its key's row is written by then
		}
		keys[k] = true
		may = append(may, n)
		if unnamed[p] || held && holder != k {
			alone[p] = true
		}
	}
	for _, n := range may {
		r := &rows[todo[n]]
		if alone[pair{r.TaskSessionID, r.ToolCallID}] {
			own = append(own, n)
		} else {
			first = append(first, n)
		}
	}
	return first, own
}

// fault is which row of rows[todo…] a failed statement (at, of
// writeStatements' stmts) wrote — -1 for none — and its error, marked
// errAbsorbing when the statement absorbed history or locked for it (the
// store then reads the table's placement again).
func (s *Store) fault(stmts []Statement, of []int, at int, err error) (int, error) {
	if at < 0 || at >= len(of) {
		return -1, err
	}
	a := s.form.Absorb
	if of[at] < 0 && a != nil && slices.Contains([]string{a.TableLock, a.Lock, a.Statement}, stmts[at].SQL) {
		s.sharded.Store(0)
		return -1, errors.Join(errAbsorbing, err)
	}
	return of[at], err
}
