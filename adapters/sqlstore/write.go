package sqlstore

// The write path: a batch (a single row is written alone, or as a batch
// of one where history may be absorbed before it), its statements, the
// absorbing of history on a dialect that moves it first, which row a
// failed statement was, and the retry of a frame refused under history's
// own id.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Upsert writes one row in one atomic statement with storekit.Merge's
// semantics. The statement is prepared once and executed with bound
// arguments: the hot path builds nothing per frame. Where the dialect
// absorbs history before the upsert (UpsertForm.Absorb), a row under an
// execution id is written in a transaction after the absorbing statement
// (docs/CONTRACT.md §8.5). A row that breaks docs/CONTRACT.md §2 is
// refused before any SQL runs (core.ErrInvalidRow).
func (s *Store) Upsert(ctx context.Context, row core.Subagent) error {
	if err := s.checkHandle(ctx); err != nil {
		return &core.OpError{Op: "upsert", Key: row.Key(), Err: err}
	}
	if err := s.prepareRow(&row); err != nil {
		return err
	}
	ctx, cancel := s.writeDeadline(ctx)
	defer cancel()
	var err error
	pool, isPool := sqldialect.PoolOf(s.db)
	switch {
	case s.form.Absorb != nil && row.AgentExecutionID != core.UnknownExecution:
		_, err = s.writeRows(ctx, []core.Subagent{row}, []int{0}, time.Time{})
	case isPool:
		which, f, cols := s.upsertOf(&row)
		var stmt *sql.Stmt
		if stmt, err = s.upsertStmt(ctx, pool, which); err == nil {
			_, err = stmt.ExecContext(ctx, upsertArgs(f, cols, &row)...)
		}
	default:
		// Not a plain pool (a host's transaction, or GORM's own
		// prepared-statement pool): the same statement through GORM, on
		// that handle.
		_, f, cols := s.upsertOf(&row)
		err = s.db.WithContext(ctx).Exec(f.Statement, upsertArgs(f, cols, &row)...).Error
	}
	if err != nil {
		err = s.keyError("upsert", row.Key(), err)
		if rows := []core.Subagent{row}; s.historysID(ctx, err, rows, []int{0}, 0) {
			return s.Upsert(ctx, rows[0])
		}
		return err
	}
	return nil
}

// historysID reports whether a row the database refused for a
// constraint, rows[todo[at]], carries the id of its own pair's backfilled
// row — the same invocation's row, imported from a store where it had
// absorbed that history — on a table where a trigger absorbs (a sharded
// one), and if so gives it a fresh id to be written again with. The
// trigger absorbs after the insert, which the primary key refuses first
// under that id; written again, the row absorbs history and takes its id
// (storekit.Absorbed), what a store absorbing before or in its statement
// makes of it at once. Only if that row is the one to absorb: history
// still holds the id, and no row before it in the write, under another
// execution whose key has no row, inserts and absorbs it first (the
// refused statement's transaction is rolled back, so none of them is
// written when this is read). The read only chooses the id the write
// proposes, which a row merging or absorbing never keeps; the write stays
// one atomic upsert. Not on a host's transaction, which the refused
// statement has aborted on PostgreSQL.
func (s *Store) historysID(ctx context.Context, err error, rows []core.Subagent, todo []int, at int) bool {
	row := &rows[todo[at]]
	if sharded, _ := s.shardedWrites(ctx); !sharded || !errors.Is(err, core.ErrConstraint) ||
		row.AgentExecutionID == core.UnknownExecution {
		return false
	}
	if _, pool := sqldialect.PoolOf(s.db); !pool {
		return false
	}
	db := s.db.WithContext(ctx)
	var n int64
	q := `SELECT count(*) FROM ` + Table + ` WHERE ` + historyOf(func(string) string { return "?" }) + ` AND id = ?`
	if db.Raw(q, row.TaskSessionID, row.ToolCallID, row.ID).Scan(&n).Error != nil || n == 0 {
		return false
	}
	named := map[string]bool{row.AgentExecutionID: true}
	var earlier []string
	for _, i := range todo[:at] {
		r := &rows[i]
		if r.TaskSessionID == row.TaskSessionID && r.ToolCallID == row.ToolCallID &&
			r.AgentExecutionID != core.UnknownExecution && !named[r.AgentExecutionID] {
			named[r.AgentExecutionID] = true
			earlier = append(earlier, r.AgentExecutionID)
		}
	}
	if len(earlier) > 0 {
		q := `SELECT count(*) FROM ` + Table + ` WHERE task_session_id = ? AND tool_call_id = ? AND agent_execution_id IN ?`
		if db.Raw(q, row.TaskSessionID, row.ToolCallID, earlier).Scan(&n).Error != nil || n < int64(len(earlier)) {
			return false
		}
	}
	row.ID = uuid.NewString()
	return true
}

// UpsertBatch implements storekit.BatchStore: the rows in order, each its own
// upsert statement (AC-14), in one transaction, so that a recorder commits
// many frames at once — after the statement that absorbs their pairs'
// history, where the dialect absorbs before the upserts (writeStatements); on a
// sharded table, in waves of multi-row upserts that leave every row as
// those statements would (waves.go). A row the database refuses is taken
// out and the others are written again in a new transaction (PostgreSQL
// aborts a transaction at its first failed statement), so it costs the
// others nothing. When the database is unavailable, no row is written and
// err matches core.ErrUnavailable.
func (s *Store) UpsertBatch(ctx context.Context, rows []core.Subagent) ([]error, error) {
	return s.upsertBatch(ctx, rows, time.Time{})
}

// upsertBatch is UpsertBatch; an import's (Store.Import) gives, in
// replacing, the instant it began: the write first drops each of its
// pairs' history that no live row has absorbed and that was written before
// then (dropHistory).
func (s *Store) upsertBatch(ctx context.Context, rows []core.Subagent, replacing time.Time) ([]error, error) {
	if err := s.checkHandle(ctx); err != nil {
		if errors.Is(err, core.ErrUnavailable) {
			return nil, err
		}
		return nil, &core.OpError{Op: "upsert batch", Err: err}
	}
	ctx, cancel := s.writeDeadline(ctx)
	defer cancel()
	rowErrs := make([]error, len(rows))
	todo := make([]int, 0, len(rows))
	for i := range rows {
		if rowErrs[i] = s.prepareRow(&rows[i]); rowErrs[i] == nil {
			todo = append(todo, i)
		}
	}
	for len(todo) > 0 {
		at, err := s.writeRows(ctx, rows, todo, replacing)
		switch {
		case err == nil:
			return rowErrs, nil
		case at < 0: // the transaction itself: not one row's fault
			return nil, s.batchError(ctx, rows, rowErrs, err)
		}
		row := &rows[todo[at]]
		if rowErrs[todo[at]] = s.keyError("upsert", row.Key(), err); errors.Is(rowErrs[todo[at]], core.ErrUnavailable) {
			return nil, rowErrs[todo[at]]
		}
		if s.historysID(ctx, rowErrs[todo[at]], rows, todo, at) {
			rowErrs[todo[at]] = nil
			continue // written again with the others
		}
		todo = append(todo[:at], todo[at+1:]...)
	}
	return rowErrs, nil
}

// batchError is UpsertBatch's error when a transaction fails as a whole:
// no row of the batch is written, and it names the rows refused before
// (taken out of the attempts, rowErrs), which a caller retrying the batch
// would otherwise not know of. Past the write's deadline, or cancelled,
// it is never one row's kind, whatever the failed statement said: the
// same batch, less its refused rows, may succeed later.
func (s *Store) batchError(ctx context.Context, rows []core.Subagent, rowErrs []error, err error) error {
	op := "upsert batch: no row written"
	var refused []string
	for i, e := range rowErrs {
		if e != nil {
			k := rows[i].Key()
			refused = append(refused, fmt.Sprintf("(%q, %q, %q)", k.TaskSessionID, k.AgentExecutionID, k.ToolCallID))
		}
	}
	if len(refused) > 0 {
		op += fmt.Sprintf(" (%d refused first, by key: %s)", len(refused), strings.Join(refused, ", "))
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		return &core.OpError{Op: op, Kind: core.ErrUnavailable, Err: errors.Join(cause, err)}
	case cause != nil: // the caller's choice: no kind
		return &core.OpError{Op: op, Err: errors.Join(cause, err)}
	}
	return s.opError(op, err)
}

// writeRows writes rows[todo…] in one transaction: the pool's, or on a
// handle that is not a pool, the handle's own (onHandle). On a failed
// statement it reports the position in todo of the row at fault, or -1
// when the fault is no row's. replacing is upsertBatch's.
func (s *Store) writeRows(ctx context.Context, rows []core.Subagent, todo []int, replacing time.Time,
) (at int, err error) {
	sharded, err := s.shardedWrites(ctx)
	if err != nil {
		return -1, err
	}
	pool, ok := sqldialect.PoolOf(s.db)
	if !ok {
		return s.onHandle(ctx, rows, todo, sharded, replacing)
	}
	if sharded {
		if done, err := s.writeWaves(ctx, pool, rows, todo, replacing); done || err != nil {
			return -1, err
		}
	}
	stmts, of := s.writeStatements(rows, todo, s.form.Absorb != nil && !sharded, replacing)
	if p, ok := s.d.(sqldialect.Pipeliner); ok {
		if at, ok, err := p.Pipeline(ctx, pool, stmts); ok {
			// A row the database refused is the row's, even when the
			// deadline passed meanwhile; any other failure then is the
			// deadline's.
			if err != nil && ctx.Err() != nil && !errors.Is(s.d.Classify(err), core.ErrConstraint) {
				return -1, errors.Join(ctx.Err(), err)
			}
			return s.fault(stmts, of, at, err)
		}
	}
	// A dialect whose engine bounds each statement runs them without
	// ctx's cancellation: go-sqlite3 watches a cancellable context with a
	// goroutine per statement, a third of its throughput. ctx still bounds
	// the wait for a connection and the transaction.
	stmtCtx := ctx
	if _, ok := s.d.(sqldialect.BoundedStatements); ok {
		stmtCtx = context.WithoutCancel(ctx)
	}
	// The forms of the upsert the rows need, prepared before the
	// transaction takes a connection: on a pool of one, a prepare inside it
	// would wait for that connection for ever.
	var prepared, upserts [len(s.prepared)]*sql.Stmt
	forms := make([]int, len(stmts))
	for k, st := range stmts {
		if of[k] < 0 {
			continue
		}
		if st.SQL == s.lean.Statement { // written by writeStatements, which chose the form
			forms[k] = 1
		}
		if prepared[forms[k]] == nil {
			if prepared[forms[k]], err = s.upsertStmt(ctx, pool, forms[k]); err != nil {
				return -1, err
			}
		}
	}
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return -1, err
	}
	for i, stmt := range prepared {
		if stmt != nil {
			upserts[i] = tx.StmtContext(stmtCtx, stmt)
		}
	}
	for k, st := range stmts {
		var err error
		if of[k] >= 0 {
			_, err = upserts[forms[k]].ExecContext(stmtCtx, st.Args...)
		} else {
			_, err = tx.ExecContext(stmtCtx, st.SQL, st.Args...)
		}
		if err != nil {
			if ctx.Err() != nil && !errors.Is(s.d.Classify(err), core.ErrConstraint) { // as in the pipeline's case
				return -1, errors.Join(ctx.Err(), err, tx.Rollback())
			}
			at, err := s.fault(stmts, of, k, err)
			return at, errors.Join(err, tx.Rollback())
		}
	}
	if err := ctx.Err(); err != nil { // past the write's deadline: not committed late
		return -1, errors.Join(err, tx.Rollback())
	}
	return -1, tx.Commit()
}

// onHandle writes rows[todo…] on a handle that is not a pool: a host's
// transaction, which holds the statements, or a handle of single
// connections (GORM's prepared statements, a *sql.Conn), on which the
// rows are written one statement each — in a transaction of their own
// when history is absorbed before them, which the planner's settings and
// the absorbing hold for.
func (s *Store) onHandle(ctx context.Context, rows []core.Subagent, todo []int, sharded bool, replacing time.Time,
) (at int, err error) {
	stmts, of := s.writeStatements(rows, todo, s.form.Absorb != nil && !sharded, replacing)
	run := func(db *gorm.DB) (int, error) {
		for k, st := range stmts {
			if err := db.Exec(st.SQL, st.Args...).Error; err != nil {
				return s.fault(stmts, of, k, err)
			}
		}
		return -1, nil
	}
	db := s.db.WithContext(ctx)
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx || len(stmts) == len(todo) {
		return run(db)
	}
	at = -1
	err = db.Transaction(func(tx *gorm.DB) error {
		at, err = run(tx)
		return err
	})
	return at, err
}

// Writers implements storekit.WriterHint with the dialect's number.
func (s *Store) Writers() int { return s.d.Writers() }

// prepareRow stamps updated_at, gives a new row its id and validates it.
func (s *Store) prepareRow(row *core.Subagent) error {
	row.UpdatedAt = s.now()
	if row.ID == "" {
		row.ID = uuid.NewString()
	}
	if err := storekit.Validate(row); err != nil {
		return &core.OpError{Op: "upsert", Key: row.Key(), Err: err}
	}
	return nil
}

// upsertStmt prepares the upsert s.prepared[which] holds (0: the whole one,
// 1: the lean one) on first use (not at construction, so a store can be
// built while the database is down). A failed prepare is not kept: the
// next write tries again.
func (s *Store) upsertStmt(ctx context.Context, pool *sql.DB, which int) (*sql.Stmt, error) {
	if stmt := s.prepared[which].Load(); stmt != nil {
		return stmt, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if stmt := s.prepared[which].Load(); stmt != nil {
		return stmt, nil
	}
	stmt, err := pool.PrepareContext(ctx, []string{s.form.Statement, s.lean.Statement}[which])
	if err != nil {
		return nil, err
	}
	s.prepared[which].Store(stmt)
	return stmt, nil
}

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
// Writers running at once never deadlock one another: a write of more
// than one row first takes a lock per pair, in one order (Absorbing.Lock),
// so that writes sharing a pair take turns; a write of one row holds one
// row at a time (history's, moved to its key, is the row it upserts).

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
// between the planner's settings and their restoring; an import's history
// is dropped before (replacing: dropHistory), after the pairs' locks.
func (s *Store) writeStatements(rows []core.Subagent, todo []int, absorb bool, replacing time.Time,
) (stmts []sqldialect.Statement, of []int) {
	add := func(st sqldialect.Statement, n int) { stmts, of = append(stmts, st), append(of, n) }
	var first, own []int
	if absorb {
		first, own = absorbers(rows, todo)
	}
	if absorb && len(todo) > 1 { // a single row locks one row at a time
		add(s.pairLocks(rows, todo), -1)
	}
	for _, st := range s.dropHistory(rows, todo, replacing) {
		add(st, -1)
	}
	absorbing := func(at ...int) {
		a := s.form.Absorb
		add(sqldialect.Statement{SQL: a.Plan}, -1)
		add(s.absorbing(rows, todo, at), -1)
		add(sqldialect.Statement{SQL: a.Restore}, -1)
	}
	if len(first) > 0 {
		absorbing(first...)
	}
	for n, i := range todo {
		if _, ok := slices.BinarySearch(own, n); ok {
			absorbing(n)
		}
		_, f, cols := s.upsertOf(&rows[i])
		add(sqldialect.Statement{SQL: f.Statement, Args: upsertArgs(f, cols, &rows[i])}, n)
	}
	return stmts, of
}

// dropHistory are an import's statements that drop, for each pair of
// rows[todo…], the pair's row of history that no live row absorbed,
// written before the import began (replacing; zero: none): the record
// imported holds that pair's history itself — the target's own pass read
// the same host messages — and its rows are written as the record has
// them, not merged into the target's reading (docs/CONTRACT.md §3.3).
func (s *Store) dropHistory(rows []core.Subagent, todo []int, replacing time.Time) []sqldialect.Statement {
	if replacing.IsZero() {
		return nil
	}
	type pair struct{ session, tool string }
	seen := map[pair]bool{}
	var out []sqldialect.Statement
	for _, i := range todo {
		p := pair{rows[i].TaskSessionID, rows[i].ToolCallID}
		if !seen[p] {
			seen[p] = true
			out = append(out, sqldialect.Statement{SQL: s.dropHistorySQL, Args: []any{p.session, p.tool, replacing}})
		}
	}
	return out
}

// absorbing is the absorbing statement of rows[todo[n]] for each n in at.
func (s *Store) absorbing(rows []core.Subagent, todo []int, at []int) sqldialect.Statement {
	var sessions, tools, executions, ids []string
	for _, n := range at {
		r := &rows[todo[n]]
		sessions, tools = append(sessions, r.TaskSessionID), append(tools, r.ToolCallID)
		executions, ids = append(executions, r.AgentExecutionID), append(ids, r.ID)
	}
	return sqldialect.Statement{SQL: s.form.Absorb.Statement, Args: []any{sessions, tools, executions, ids}}
}

// pairLocks is the statement that takes the locks of rows[todo…]'s
// pairs (Absorbing.Lock).
func (s *Store) pairLocks(rows []core.Subagent, todo []int) sqldialect.Statement {
	sessions, tools := make([]string, len(todo)), make([]string, len(todo))
	for n, i := range todo {
		sessions[n], tools[n] = rows[i].TaskSessionID, rows[i].ToolCallID
	}
	return sqldialect.Statement{SQL: s.form.Absorb.Lock, Args: []any{sessions, tools}}
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
// errAbsorbing when the statement absorbed history (the store then reads
// the table's placement again).
func (s *Store) fault(stmts []sqldialect.Statement, of []int, at int, err error) (int, error) {
	if at < 0 || at >= len(of) {
		return -1, err
	}
	if of[at] < 0 && s.form.Absorb != nil && stmts[at].SQL == s.form.Absorb.Statement {
		s.sharded.Store(0)
		return -1, errors.Join(errAbsorbing, err)
	}
	return of[at], err
}

// args are a row's values of cols, in their order.
func args(row *core.Subagent, cols []storekit.Column) []any {
	out := make([]any, len(cols))
	for i, c := range cols {
		out[i] = c.Value(row)
	}
	return out
}

// upsertOf is the upsert that writes row — the lean one where the row has
// no value for a sparse column — as its index in s.prepared, with its
// form and the columns it names.
func (s *Store) upsertOf(row *core.Subagent) (which int, f *sqldialect.UpsertForm, cols []storekit.Column) {
	if isLean(row) {
		return 1, &s.lean, leanColumns
	}
	return 0, &s.form, columns
}

// upsertArgs are the arguments for row of f, which names cols (UpsertForm.Args).
func upsertArgs(f *sqldialect.UpsertForm, cols []storekit.Column, row *core.Subagent) []any {
	values := args(row, cols)
	if f.Args == nil {
		return values
	}
	out := make([]any, len(f.Args))
	for i, c := range f.Args {
		out[i] = values[c]
	}
	return out
}
