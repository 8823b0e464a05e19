package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// TestMain runs the package with a non-UTC local zone: nothing may depend on
// the process's TZ (docs/CONTRACT.md §2).
func TestMain(m *testing.M) {
	time.Local = time.FixedZone("UTC-07", -7*3600)
	os.Exit(m.Run())
}

// TestSQL runs the dialect suite on SQLite.
func TestSQL(t *testing.T) { sqltest.Exercise(t, testenv.SQLite()) }

func FuzzMerge(f *testing.F) { sqltest.FuzzMerge(f, testenv.SQLite()) }

// TestInstantOrdersAnyTextForm checks SQLite's timestamp expression on the
// text forms a TIMESTAMP column may hold (AC-24e).
func TestInstantOrdersAnyTextForm(t *testing.T) {
	e := testenv.SQLite().Env(t)
	ref := time.Date(2026, 3, 4, 5, 6, 7, 999999000, time.UTC)
	cases := map[string]time.Time{
		"2026-03-04 05:06:07.999999+00:00":  ref,
		"2026-03-04T05:06:07.999999Z":       ref,
		"2026-03-04 07:06:07.999999+02:00":  ref,
		"2026-03-04 05:06:07.9999996+00:00": ref, // beyond microseconds: truncated, never carried into the next second
		"2026-03-04 05:06:07.5+00:00":       time.Date(2026, 3, 4, 5, 6, 7, 500000000, time.UTC),
		"2026-03-04 05:06:07+00:00":         time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		"2026-03-04 05:06:07":               time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		"1901-12-13 20:45:52.000001+00:00":  time.Date(1901, 12, 13, 20, 45, 52, 1000, time.UTC),
		"9999-12-31 23:59:59.999999+00:00":  time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		"2026-03-03 22:06:07.999999-07:00":  ref,
		"2026-03-04 05:06:07.000001+00:00":  time.Date(2026, 3, 4, 5, 6, 7, 1000, time.UTC),
	}
	for text, want := range cases {
		var got int64
		args := make([]any, strings.Count(sqlite.Dialect{}.Instant("?"), "?"))
		for i := range args {
			args[i] = text
		}
		if err := e.DB.Raw(`SELECT `+sqlite.Dialect{}.Instant("?"), args...).Scan(&got).Error; err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got != want.UnixMicro() {
			t.Errorf("%s: instant %d, want %d (%s)", text, got, want.UnixMicro(), want.Format(time.RFC3339Nano))
		}
	}
}

// TestConcurrentWritersOneFile: 16 goroutines each write 2,000 frames over
// shared and distinct keys into one SQLite file: no failed write and the
// exact expected rows.
func TestConcurrentWritersOneFile(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	e := testenv.SQLite().Env(t)
	ctx := context.Background()
	if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, "sess", "task"); err != nil {
		t.Fatal(err)
	}
	const writers, frames = 16, 2000
	tool := func(w, i int) string {
		if i%4 == 0 {
			return fmt.Sprintf("shared-%d", i%10) // keys every writer hits
		}
		return fmt.Sprintf("own-%d-%d", w, i%100) // keys of one writer
	}
	want := map[string]bool{}
	for w := range writers {
		for i := range frames {
			want[tool(w, i)] = true
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range frames {
				row, _ := core.Normalize(
					core.Frame{TaskSessionID: "sess", TaskID: "task", ExecutionID: "exec", ToolCallID: tool(w, i),
						ToolStatus: "in_progress", ObservedAt: time.Now(), Payload: &core.Payload{TotalTokens: int64(i + 1)}},
				)
				if err := e.Store.Upsert(ctx, row); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a write failed: %v", err)
	}
	rows, err := e.Store.ListBySession(ctx, "sess", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Errorf("rows = %d, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		if !want[r.ToolCallID] || r.TotalTokens == nil || *r.TotalTokens < 1 || *r.TotalTokens > frames {
			t.Errorf("unexpected row %s tokens %v", r.ToolCallID, r.TotalTokens)
		}
	}
}

// TestStoreOnAHostTransaction: a host may hand the store a *gorm.DB that is
// a transaction; the upsert then runs through GORM, inside it.
func TestStoreOnAHostTransaction(t *testing.T) {
	e := testenv.SQLite().Env(t)
	ctx := context.Background()
	kandevtest.InsertSession(ctx, e.DB, e.Tables, "s", "t")
	tx := e.DB.Begin()
	s, err := sqlite.New(tx)
	if err != nil {
		t.Fatal(err)
	}
	row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c", ObservedAt: time.Now(),
		Payload: &core.Payload{Model: "m"}})
	for range 2 {
		if err := s.Upsert(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	if rows, err := s.ListBySession(ctx, "s", core.Page{}); err != nil || len(rows) != 1 || *rows[0].Model != "m" {
		t.Fatalf("inside the transaction: %v %v", rows, err)
	}
	tx.Rollback()
	if rows, err := e.Store.ListBySession(ctx, "s", core.Page{}); err != nil || len(rows) != 0 {
		t.Errorf("after the host's rollback: %d rows, %v", len(rows), err)
	}
}

// TestSchemaOnAHostTransaction: EnsureSchema through a host's transaction
// creates the table inside it (it used to wait on that transaction's own
// lock from another connection); a rollback leaves none.
func TestSchemaOnAHostTransaction(t *testing.T) {
	db, err := sqlite.OpenDB(filepath.Join(t.TempDir(), "host.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := kandevtest.CreateTables(ctx, db, sqlstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	tx := db.Begin()
	s, err := sqlite.New(tx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureSchema(ctx); err != nil {
		t.Fatalf("EnsureSchema on a host's transaction: %v", err)
	}
	var n int
	tx.Raw(`SELECT count(*) FROM sqlite_master WHERE name = 'task_session_subagents'`).Scan(&n)
	tx.Rollback()
	var after int
	db.Raw(`SELECT count(*) FROM sqlite_master WHERE name = 'task_session_subagents'`).Scan(&after)
	if n != 1 || after != 0 {
		t.Errorf("the table inside the transaction: %d, after its rollback: %d; want 1 and 0", n, after)
	}
}

// TestKilledWhileWritingHelper is the child of TestKilledWhileWriting, not
// a test of its own.
func TestKilledWhileWritingHelper(t *testing.T) {
	path := os.Getenv("SUBAGENTCTX_RECORD_DB")
	if path == "" {
		t.Skip("child process of TestKilledWhileWriting")
	}
	store, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		row, _ := core.Normalize(
			core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e", ToolCallID: fmt.Sprint("k", i%300),
				ObservedAt: time.Now(), Payload: &core.Payload{TotalTokens: int64(i + 1),
					Description: strings.Repeat("d", i%4096)}},
		)
		if err := store.Upsert(context.Background(), row); err != nil {
			fmt.Println("ERROR", err)
			continue
		}
		fmt.Printf("COMMITTED k%d %d\n", i%300, i+1) // acknowledged only after the commit returned
	}
}

// TestKilledWhileWriting: SIGKILL in the middle of writes leaves a database
// that opens cleanly with every acknowledged write intact.
func TestKilledWhileWriting(t *testing.T) {
	e := testenv.SQLite().Env(t)
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s", "t")
	path := strings.TrimPrefix(e.DSN, "sqlite:")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWhileWritingHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "SUBAGENTCTX_RECORD_DB="+path)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int64{}
	acks := 0
	sc := bufio.NewScanner(out)
	for acks < 3000 && sc.Scan() {
		var key string
		var v int64
		if _, err := fmt.Sscanf(sc.Text(), "COMMITTED %s %d", &key, &v); err == nil {
			acked[key] = v
			acks++
		}
	}
	cmd.Process.Kill() // SIGKILL, mid-write
	cmd.Wait()
	if acks < 3000 {
		t.Fatalf("child acknowledged only %d writes", acks)
	}
	db, err := sqlite.OpenDB(path) // a fresh open after the crash
	if err != nil {
		t.Fatal(err)
	}
	var check string
	db.Raw(`PRAGMA integrity_check`).Scan(&check)
	if check != "ok" {
		t.Fatalf("integrity_check: %s", check)
	}
	store, err := sqlite.New(db)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := store.ListBySession(context.Background(), "s", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range rows {
		got[r.ToolCallID] = *r.TotalTokens
	}
	for k, v := range acked {
		if got[k] < v {
			t.Errorf("%s: acknowledged total_tokens %d, found %d after the crash", k, v, got[k])
		}
	}
}

// TestHandedOverHandleChecked: a pool the host opened with a plain DSN
// (foreign keys off; go-sqlite3 sets a busy timeout of its own,
// modernc.org/sqlite none and writes times in Go's String() form) is
// refused with an error naming the setting and how to set it, before
// anything is written; a busy timeout of 0 is refused too; the same file
// through a DSN with the settings works.
func TestHandedOverHandleChecked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.db")
	plain, err := sql.Open(sqlite.DriverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	s, err := sqlite.NewSQL(plain)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := kandevtest.CreateTables(ctx, s.DB(), s.Tables()); err != nil {
		t.Fatal(err)
	}
	err = s.EnsureSchema(ctx)
	if !errors.Is(err, sqlstore.ErrHandleSettings) ||
		!strings.Contains(err.Error(), sqlite.PragmaParam("foreign_keys", "1")) {
		t.Fatalf("plain handle: %v", err)
	}
	row, _ := core.Normalize(
		core.Frame{TaskSessionID: "no-such-session", TaskID: "t", ToolCallID: "c", ObservedAt: time.Now()},
	)
	if err := s.Upsert(ctx, row); !errors.Is(err, sqlstore.ErrHandleSettings) {
		t.Errorf("a write on the plain handle: %v, want ErrHandleSettings (never a row for a missing session)", err)
	}
	noWait, err := sql.Open(sqlite.DriverName, "file:"+path+"?"+sqlite.PragmaParam("foreign_keys", "1")+"&"+
		sqlite.PragmaParam("busy_timeout", "0")+"&_time_format=sqlite")
	if err != nil {
		t.Fatal(err)
	}
	defer noWait.Close()
	if s, _ := sqlite.NewSQL(noWait); !errors.Is(s.EnsureSchema(ctx), sqlstore.ErrHandleSettings) ||
		!strings.Contains(s.EnsureSchema(ctx).Error(), "busy_timeout") {
		t.Errorf("busy timeout 0: %v", s.EnsureSchema(ctx))
	}
	good, err := sql.Open(sqlite.DriverName, sqlite.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	s, err = sqlite.NewSQL(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureSchema(ctx); err != nil {
		t.Errorf("a handle with the settings: %v", err)
	}
}

// TestRecorderKilledHelper is the child of TestRecorderKilled, not a test
// of its own: it records frames with distinct keys as fast as it can and
// prints the counters as it goes.
func TestRecorderKilledHelper(t *testing.T) {
	path := os.Getenv("SUBAGENTCTX_RECORDER_DB")
	if path == "" {
		t.Skip("child process of TestRecorderKilled")
	}
	store, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := core.NewRecorder(store, core.WithQueue(killQueue))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		rec.Record(
			context.Background(),
			core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e", ToolCallID: fmt.Sprint("k", i),
				ObservedAt: time.Now(), Payload: &core.Payload{TotalTokens: int64(i + 1)}},
		)
		if i%100 == 0 {
			v := rec.Counters().Values()
			fmt.Printf("COUNTERS %d %d %d\n", v.Attempted, v.Persisted, v.Failed)
		}
	}
}

const killQueue = 2048

// TestRecorderKilled: what a crash costs (docs/CONTRACT.md §6). After
// SIGKILL every frame counted persisted is in the database, and the frames
// lost without being counted failed are at most those queued (the queue
// and one batch in flight). The child records faster than SQLite writes,
// so many frames are dropped at a full queue: those are counted failed.
func TestRecorderKilled(t *testing.T) {
	e := testenv.SQLite().Env(t)
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s", "t")
	path := strings.TrimPrefix(e.DSN, "sqlite:")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecorderKilledHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "SUBAGENTCTX_RECORDER_DB="+path)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var attempted, persisted, failed int64
	sc := bufio.NewScanner(out)
	for persisted < 20000 && sc.Scan() {
		fmt.Sscanf(sc.Text(), "COUNTERS %d %d %d", &attempted, &persisted, &failed)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if persisted < 20000 {
		t.Fatalf("the child persisted only %d frames", persisted)
	}
	var rows int64
	if err := e.DB.Raw(`SELECT count(*) FROM task_session_subagents`).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if rows < persisted {
		t.Errorf("%d rows after the crash, but %d frames were counted persisted", rows, persisted)
	}
	if lost := attempted - failed - rows; lost > killQueue+core.DefaultBatchSize {
		t.Errorf("%d frames lost without being counted failed, more than the queue (%d) and one batch", lost, killQueue)
	}
}

// TestAC32_EarlierBuildsTriggerDropped: the trigger earlier builds absorbed
// history with is dropped by the pass (the upsert absorbs by itself,
// docs/CONTRACT.md §8.5), and an up-to-date table gets no DDL. While a
// process of an earlier build has it back, this build's upsert still
// keeps one row per pair: history's, moved to the execution, under its id.
func TestAC32_EarlierBuildsTriggerDropped(t *testing.T) {
	e := testenv.SQLite().Env(t)
	ctx := context.Background()
	trigger := `CREATE TRIGGER subagentctx_absorb_v1 AFTER INSERT ON task_session_subagents FOR EACH ROW
		WHEN NEW.agent_execution_id <> 'unknown' BEGIN
		DELETE FROM task_session_subagents WHERE task_session_id = NEW.task_session_id
			AND tool_call_id = NEW.tool_call_id AND agent_execution_id = 'unknown' AND source = 'backfill';
		END`
	triggers := func() (n int) {
		t.Helper()
		if err := e.DB.Raw(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger'`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	e.Exec(t, trigger)
	if r := migration.New(e.Store).Run(ctx); r.Failed() {
		t.Fatalf("pass: %s", r)
	}
	if n := triggers(); n != 0 {
		t.Fatalf("after the pass %d triggers, want none", n)
	}

	e.Exec(t, trigger) // an earlier build's process, booting again
	kandevtest.InsertSession(ctx, e.DB, e.Tables, "s", "t")
	history, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c",
		ObservedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Payload: &core.Payload{Model: "m"}})
	history.ID, history.Source = "history-row", core.SourceBackfill
	live, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e1", ToolCallID: "c",
		ObservedAt: time.Date(2026, 1, 2, 3, 9, 0, 0, time.UTC), ToolStatus: "completed"})
	for _, row := range []core.Subagent{history, live} {
		if err := e.Store.Upsert(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := e.Store.ListBySession(ctx, "s", core.Page{})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows of the pair: %d, %v; want one", len(rows), err)
	}
	r := rows[0]
	if r.ID != "history-row" || r.AgentExecutionID != "e1" || r.Source != core.SourceBackfill ||
		*r.Model != "m" || *r.ToolStatus != "completed" || !r.ObservedAt.Equal(history.ObservedAt) {
		t.Errorf("the absorbed row: %+v", r)
	}
	if r := migration.New(e.Store).Run(ctx); r.Failed() || triggers() != 0 {
		t.Errorf("the next pass: %s, %d triggers left", r, triggers())
	}
}

// TestAC32_HistoryIndexMadeUnique: the pass turns an earlier build's history
// index (not unique, backfilled rows only) into SQLite's form, unique over
// every row keyed 'unknown', whose ON CONFLICT clause absorbs history, rows
// kept; a frame naming no execution merges into its own 'unknown' row
// through that clause, and a live 'unknown' row is never absorbed.
func TestAC32_HistoryIndexMadeUnique(t *testing.T) {
	e := testenv.SQLite().Env(t)
	ctx := context.Background()
	kandevtest.InsertSession(ctx, e.DB, e.Tables, "s", "t")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	history, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c", ObservedAt: at,
		Payload: &core.Payload{Model: "m"}})
	history.ID, history.Source = "history-row", core.SourceBackfill
	if err := e.Store.Upsert(ctx, history); err != nil {
		t.Fatal(err)
	}
	e.Exec(t, `DROP INDEX idx_subagents_history`)
	e.Exec(t, `CREATE INDEX idx_subagents_history ON task_session_subagents(task_session_id, tool_call_id)
		WHERE agent_execution_id = 'unknown' AND source = 'backfill'`)
	if r := migration.New(e.Store).Run(ctx); r.Failed() {
		t.Fatalf("pass: %s", r)
	}
	var sql string
	var unique int
	if err := e.DB.Raw(`SELECT sql, (SELECT "unique" FROM pragma_index_list('task_session_subagents')
		WHERE name = 'idx_subagents_history') FROM sqlite_master WHERE name = 'idx_subagents_history'`).
		Row().Scan(&sql, &unique); err != nil {
		t.Fatal(err)
	}
	if want := `CREATE UNIQUE INDEX idx_subagents_history ON task_session_subagents(task_session_id, tool_call_id, ` +
		`agent_execution_id) WHERE agent_execution_id = 'unknown'`; sql != want || unique != 1 {
		t.Fatalf("the history index after the pass: %q (unique %d), want %q", sql, unique, want)
	}
	frames := []core.Frame{
		{TaskSessionID: "s", TaskID: "t", ExecutionID: "e1", ToolCallID: "c", ObservedAt: at.Add(time.Minute),
			ToolStatus: "completed"},
		{TaskSessionID: "s", TaskID: "t", ToolCallID: "d", ObservedAt: at, ToolStatus: "in_progress"},
		{TaskSessionID: "s", TaskID: "t", ToolCallID: "d", ObservedAt: at.Add(time.Second), ToolStatus: "completed",
			Payload: &core.Payload{Model: "n"}},
		{TaskSessionID: "s", TaskID: "t", ExecutionID: "e1", ToolCallID: "d", ObservedAt: at.Add(2 * time.Second),
			ToolStatus: "in_progress"},
	}
	for _, f := range frames {
		row, _ := core.Normalize(f)
		if err := e.Store.Upsert(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := e.Store.ListBySession(ctx, "s", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]core.Subagent{}
	for _, r := range rows {
		got[r.ToolCallID+"/"+r.AgentExecutionID] = r
	}
	c, unknown, second := got["c/e1"], got["d/unknown"], got["d/e1"]
	if len(rows) != 3 || c.ID != "history-row" || c.Source != core.SourceBackfill || *c.Model != "m" ||
		*c.ToolStatus != "completed" {
		t.Fatalf("rows: %+v; want history absorbed under e1 and two rows of d", rows)
	}
	if unknown.Source != core.SourceLive || *unknown.ToolStatus != "completed" || *unknown.Model != "n" ||
		!unknown.ObservedAt.Equal(at) || second.Source != core.SourceLive || *second.ToolStatus != "in_progress" {
		t.Errorf("d's rows: %+v and %+v; want the frames without an execution merged, e1's apart", unknown, second)
	}
}
