package postgres_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/faultproxy"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// role creates a login role for the test with the given settings and the
// rights to write the record, and returns a DSN that logs in as it.
func role(t *testing.T, e *sqltest.Env, settings ...string) (name, dsn string) {
	t.Helper()
	name = "r_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	e.Exec(t, `CREATE ROLE `+name+` LOGIN`)
	t.Cleanup(func() {
		e.DB.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ?`, name)
		e.DB.Exec(`DROP OWNED BY ` + name)
		e.DB.Exec(`DROP ROLE ` + name)
	})
	e.Exec(t, `GRANT USAGE ON SCHEMA public TO `+name)
	e.Exec(t, `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO `+name)
	for _, s := range settings {
		e.Exec(t, `ALTER ROLE `+name+` `+s)
	}
	u, err := url.Parse(e.DSN)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(name)
	return name, u.String()
}

// storeAs opens the record's store as the role.
func storeAs(t *testing.T, dsn string) *sqlstore.Store {
	t.Helper()
	db, err := postgres.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB, _ := db.DB(); sqlDB.Close() })
	return s
}

// holdLock takes the record's table exclusively on its own transaction
// until the returned function releases it.
func holdLock(t *testing.T, db *gorm.DB) (release func()) {
	t.Helper()
	tx := db.Begin()
	if err := tx.Exec(`LOCK TABLE task_session_subagents IN ACCESS EXCLUSIVE MODE`).Error; err != nil {
		t.Fatal(err)
	}
	return func() { tx.Commit() }
}

// TestPassingStates: each condition docs/CONTRACT.md §6.1 calls the
// database's passing state, produced on a real server: the recorder keeps
// the frames through it and writes every one once it clears.
func TestPassingStates(t *testing.T) {
	t.Run("53300_TooManyConnectionsAtConnect", func(t *testing.T) {
		e := testenv.Postgres().Env(t)
		name, dsn := role(t, e, `CONNECTION LIMIT 0`)
		e.Kept(t, storeAs(t, dsn), func() func() {
			return func() { e.Exec(t, `ALTER ROLE `+name+` CONNECTION LIMIT -1`) }
		})
	})
	t.Run("25006_ReadOnly", func(t *testing.T) {
		e := testenv.Postgres().Env(t)
		name, dsn := role(t, e, `SET default_transaction_read_only = on`)
		e.Kept(t, storeAs(t, dsn), func() func() {
			return func() {
				// As a failover ends: the server takes writes, the old
				// sessions are gone (57P01 to whoever uses one).
				e.Exec(t, `ALTER ROLE `+name+` RESET default_transaction_read_only`)
				e.Exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '`+name+`'`)
			}
		})
	})
	t.Run("55P03_LockTimeout", func(t *testing.T) {
		e := testenv.Postgres().Env(t)
		_, dsn := role(t, e, `SET lock_timeout = '50ms'`)
		e.Kept(t, storeAs(t, dsn), func() func() { return holdLock(t, e.DB) })
	})
	t.Run("57014_StatementTimeout", func(t *testing.T) {
		e := testenv.Postgres().Env(t)
		_, dsn := role(t, e, `SET statement_timeout = '50ms'`)
		e.Kept(t, storeAs(t, dsn), func() func() { return holdLock(t, e.DB) })
	})
	t.Run("BatchDeadline", func(t *testing.T) { // the library's own deadline, the lock held longer
		e := testenv.Postgres().Env(t)
		e.Kept(t, storeAs(t, e.DSN), func() func() { return holdLock(t, e.DB) })
	})
}

// TestTransactionConflictsArePassing: a deadlock (40P01) and a
// serialization failure (40001), produced on a real server, classify as
// the database's passing state: the retry succeeds.
func TestTransactionConflictsArePassing(t *testing.T) {
	e := testenv.Postgres().Env(t)
	e.Exec(t, `CREATE TABLE conflict (k int PRIMARY KEY, v int)`)
	e.Exec(t, `INSERT INTO conflict VALUES (1, 0), (2, 0)`)
	a, b := e.DB.Begin(), e.DB.Begin()
	a.Exec(`UPDATE conflict SET v = 1 WHERE k = 1`)
	b.Exec(`UPDATE conflict SET v = 1 WHERE k = 2`)
	errs := make(chan error, 2)
	go func() { errs <- a.Exec(`UPDATE conflict SET v = 2 WHERE k = 2`).Error }()
	time.Sleep(100 * time.Millisecond)
	go func() { errs <- b.Exec(`UPDATE conflict SET v = 2 WHERE k = 1`).Error }()
	var deadlock error
	for range 2 {
		if err := await.Recv(t, errs, "the conflicting updates"); err != nil {
			deadlock = err
		}
	}
	a.Rollback()
	b.Rollback()
	c := e.DB.Begin(&sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	c.Exec(`SELECT v FROM conflict WHERE k = 1`) // the snapshot
	e.Exec(t, `UPDATE conflict SET v = 3 WHERE k = 1`)
	serialization := c.Exec(`UPDATE conflict SET v = 4 WHERE k = 1`).Error
	c.Rollback()
	for name, err := range map[string]error{"40P01 deadlock": deadlock, "40001 serialization": serialization} {
		if err == nil || !errors.Is(postgres.Dialect{}.Classify(err), core.ErrUnavailable) {
			t.Errorf("%s: %v classifies as %v, want core.ErrUnavailable", name, err, postgres.Dialect{}.Classify(err))
		}
	}
}

// TestSilentConnection: a connection that goes quiet without a reset
// (lost NAT or firewall state) holds no writer: each batch's deadline ends
// the write, which is retried, so nothing is lost or failed and every
// frame is written once traffic flows again; Close at its budget gives up
// what is still unwritten, the blocked write included, and pending reaches
// 0 (docs/CONTRACT.md §6.2).
func TestSilentConnection(t *testing.T) {
	e := testenv.Postgres().Env(t)
	proxy, dsn := faultproxy.Between(t, e.DSN)
	store := storeAs(t, dsn)
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s", "t")
	var logs testlog.Buffer
	rec, _ := core.NewRecorder(store, core.WithWriteTimeout(300*time.Millisecond),
		core.WithRetry(10*time.Millisecond, 50*time.Millisecond), core.WithDrain(500*time.Millisecond),
		core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	record := func(from, n int) {
		for i := from; i < from+n; i++ {
			rec.Record(context.Background(), core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e",
				ToolCallID: fmt.Sprint("c", i), ToolStatus: "completed"})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	record(0, 50)
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.Set(faultproxy.Stall)
	record(50, 50)
	time.Sleep(time.Second) // three deadlines
	if v := rec.Counters().Values(); v.Failed != 0 || v.Pending != 50 {
		t.Errorf("stalled: %+v; want 50 kept", v)
	}
	proxy.Set(faultproxy.Pass)
	if err := rec.Flush(ctx); err != nil {
		t.Fatalf("after the stall: %v\n%s", err, logs.String())
	}
	var stored int64
	e.DB.Raw(`SELECT count(*) FROM task_session_subagents WHERE task_session_id = 's'`).Scan(&stored)
	if v := rec.Counters().Values(); v.Persisted != 100 || v.Failed != 0 || stored != 100 {
		t.Errorf("after the stall: %+v, %d rows; want 100 persisted and stored", v, stored)
	}
	proxy.Set(faultproxy.Stall)
	record(100, 20)
	start := time.Now()
	err := rec.Close(context.Background())
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close took %v with a budget of 500ms", took)
	}
	if v := rec.Counters().Values(); err == nil || v.Pending != 0 || v.Failed != 20 || v.Persisted != 100 {
		t.Errorf("Close while stalled: %v, %+v; want the 20 given up and none pending", err, v)
	}
}

// TestAbsorbingRefusedByAWriterThatDoesNot (docs/CONTRACT.md §6.1, §8.5):
// while a write moves a pair's history to its frame's key, a writer that
// absorbs nothing (an earlier build's, during a deploy) inserts that key
// and commits: the move is refused by the key, which is no frame's fault
// but the database's passing state, and written again the frame merges
// into that key's row, history left for the repair.
func TestAbsorbingRefusedByAWriterThatDoesNot(t *testing.T) {
	e := testenv.Postgres().Env(t)
	ctx := context.Background()
	if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, "s", "t"); err != nil {
		t.Fatal(err)
	}
	insert := `INSERT INTO task_session_subagents (id, task_session_id, task_id, agent_execution_id, tool_call_id,
		is_async, source, observed_at, updated_at) VALUES (?, 's', 't', ?, 'c', 0, ?, now(), now())`
	e.Exec(t, insert, "history", "unknown", "backfill")
	earlier := e.DB.Begin()
	if err := earlier.Exec(insert, "earlier", "e1", "live").Error; err != nil {
		t.Fatal(err)
	}
	frame, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e1", ToolCallID: "c",
		ToolStatus: "completed", ObservedAt: time.Now()})
	written := make(chan error, 1)
	go func() { written <- e.Store.Upsert(ctx, frame) }()
	time.Sleep(200 * time.Millisecond) // the move waits for the earlier writer's key
	if err := earlier.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := await.Recv(t, written, "the write"); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("the write refused by the earlier writer's key: %v, want the database's passing state", err)
	}
	if err := e.Store.Upsert(ctx, frame); err != nil {
		t.Fatalf("written again: %v", err)
	}
	rows, err := e.Store.ListBySession(ctx, "s", core.Page{})
	if err != nil || len(rows) != 2 || rows[0].ID == rows[1].ID {
		t.Fatalf("rows %+v, %v: want the earlier writer's row and history apart", rows, err)
	}
	for _, r := range rows {
		if r.ID == "earlier" && (r.AgentExecutionID != "e1" || r.ToolStatus == nil || *r.ToolStatus != "completed") ||
			r.ID == "history" && r.AgentExecutionID != core.UnknownExecution {
			t.Errorf("row %s: %+v", r.ID, r)
		}
	}
}

// TestBatchPastItsDeadlineNamesItsRefusedRows: a batch whose refused row
// was taken out and whose retry then ran past the caller's deadline fails
// as a whole as the database's passing state — never as the refused row's
// constraint, which a host trusting the kind would drop the valid rows
// for — and its error names the row refused and says that no row was
// written; the valid row is written when the batch is tried again.
func TestBatchPastItsDeadlineNamesItsRefusedRows(t *testing.T) {
	e := testenv.Postgres().Env(t)
	ctx := context.Background()
	if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, "s", "t"); err != nil {
		t.Fatal(err)
	}
	frame := func(session, tool string) core.Subagent {
		// Under no execution: a write that absorbs nothing, whose rows
		// are locked one by one by their upserts.
		row, _ := core.Normalize(core.Frame{TaskSessionID: session, TaskID: "t", ToolCallID: tool,
			ToolStatus: "in_progress", ObservedAt: time.Now()})
		return row
	}
	if _, err := e.Store.UpsertBatch(ctx, []core.Subagent{frame("s", "held")}); err != nil {
		t.Fatal(err)
	}
	lock := e.DB.Begin()
	if err := lock.Exec(`SELECT 1 FROM task_session_subagents WHERE tool_call_id = 'held' FOR UPDATE`).Error; err != nil {
		t.Fatal(err)
	}
	batch := []core.Subagent{frame("no-such-session", "refused"), frame("s", "held")}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	rowErrs, err := e.Store.UpsertBatch(short, batch)
	lock.Rollback()
	if rowErrs != nil || !errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrConstraint) {
		t.Fatalf("the batch past its deadline: %v, %v; want the passing state as a whole", rowErrs, err)
	}
	for _, want := range []string{"no row written", `"no-such-session", "unknown", "refused"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the batch's error %q does not say %q", err, want)
		}
	}
	rowErrs, err = e.Store.UpsertBatch(ctx, batch)
	if err != nil || rowErrs[1] != nil || !errors.Is(rowErrs[0], core.ErrConstraint) {
		t.Fatalf("the batch again: %v, %v; want the refused row's constraint alone", rowErrs, err)
	}
}

// TestStatementLeftOnTheServerDropsTheConnection (docs/CONTRACT.md §6.1):
// a connection on which the server holds a statement pgx does not know it
// prepared — what a Parse that completed in a statement then cancelled by
// its statement_timeout leaves — refuses every later prepare of it (42P05);
// the write on it is the database's passing state, the connection is
// dropped, and the next write, on a fresh one, succeeds. On a pool of one
// connection, where nothing else would replace it.
func TestStatementLeftOnTheServerDropsTheConnection(t *testing.T) {
	e := testenv.Postgres().Env(t)
	e.Session(t, "s1")
	db, err := postgres.OpenDB(e.DSN)
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := db.DB()
	pool.SetMaxOpenConns(1)
	t.Cleanup(func() { pool.Close() })
	s, err := postgres.New(db)
	if err != nil {
		t.Fatal(err)
	}
	// The name pgx v5 gives a statement it prepares under its own text
	// (newer releases deallocate one their own failed Describe left; one
	// left by any other way still refuses the next prepare).
	digest := sha256.Sum256([]byte(s.UpsertStatement()))
	name := `"stmt_` + hex.EncodeToString(digest[:24]) + `"`
	if err := db.Exec(`PREPARE ` + name + ` AS ` + s.UpsertStatement()).Error; err != nil {
		t.Fatal(err)
	}
	// A row with the run's usage and no execution: the whole upsert alone.
	requests := int64(2)
	row, _ := core.Normalize(core.Frame{TaskSessionID: "s1", TaskID: "task-s1", ToolCallID: "tc-1",
		ObservedAt: time.Now(), Usage: &core.Usage{Requests: &requests}})
	rowErrs, err := s.UpsertBatch(context.Background(), []core.Subagent{row})
	if !errors.Is(err, core.ErrUnavailable) || errors.Join(rowErrs...) != nil {
		t.Fatalf("on the connection holding the statement: %v, rows %v; want the database unavailable", err, rowErrs)
	}
	if rowErrs, err := s.UpsertBatch(context.Background(), []core.Subagent{row}); err != nil ||
		errors.Join(rowErrs...) != nil {
		t.Fatalf("on a fresh connection: %v, rows %v", err, rowErrs)
	}
	rows, err := s.ListBySession(context.Background(), "s1", core.Page{})
	if err != nil || len(rows) != 1 || rows[0].Requests == nil || *rows[0].Requests != 2 {
		t.Fatalf("stored: %+v, %v", rows, err)
	}
}
