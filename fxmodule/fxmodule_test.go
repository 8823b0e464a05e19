package fxmodule_test

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"log/slog"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/fxmodule"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/faultproxy"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
	"github.com/subagentctx/subagentctx/migration"
)

var t0 = time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)

// host is what a host application's code looks like: it receives the
// Recorder and the Store from the graph and knows nothing of adapters.
type host struct {
	rec    *core.Recorder
	store  core.Store
	reader report.Reader
}

func newHost(rec *core.Recorder, store core.Store, reader report.Reader) *host {
	return &host{rec: rec, store: store, reader: reader}
}

func supply(s *sqlstore.Store) fx.Option {
	return fx.Provide(func() *sqlstore.Store { return s })
}

// TestSameHostCodeOnEveryStore: the host's code is unchanged from the
// memory module to the SQL module on every dialect.
func TestSameHostCodeOnEveryStore(t *testing.T) {
	options := map[string]fx.Option{"memory": fxmodule.Memory}
	for _, d := range testenv.Drivers() {
		e := d.Env(t)
		kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "fx-sess", "fx-task")
		options[d.Name] = fx.Options(supply(e.Store), fxmodule.SQL)
	}
	for name, module := range options {
		t.Run(name, func(t *testing.T) {
			opts := []fx.Option{module, fx.Provide(newHost), fx.NopLogger}
			if err := fx.ValidateApp(opts...); err != nil {
				t.Fatalf("ValidateApp: %v", err)
			}
			var h *host
			app := fxtest.New(t, append(opts, fx.Populate(&h))...)
			app.RequireStart()
			ctx := context.Background()
			before := h.rec.Counters().Values()
			frames := kandevtest.Stream("fx-", t0)
			for i := range frames {
				frames[i].TaskSessionID = "fx-sess"
				h.rec.Record(ctx, frames[i])
			}
			if err := h.rec.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			v := h.rec.Counters().Values()
			if v.Failed != before.Failed || v.Persisted-before.Persisted != int64(len(frames)-1) ||
				v.SkippedNoIdentity-before.SkippedNoIdentity != 1 {
				t.Fatalf("counters %+v before %+v", v, before)
			}
			rows, err := h.store.ListBySession(ctx, "fx-sess", core.Page{})
			if err != nil {
				t.Fatal(err)
			}
			// kandevtest.Stream: 1 + 3 async + 1 nested + 8 fan-out + 1 second execution.
			if len(rows) != 14 {
				t.Errorf("rows = %d, want 14", len(rows))
			}
			if _, err := h.reader.Stats(ctx, report.StatsQuery{TaskSessionID: "fx-sess"}); err != nil {
				t.Error(err)
			}
			app.RequireStop()
		})
	}
}

func TestCountersPublishedOnceAcrossApps(t *testing.T) {
	for range 2 {
		app := fxtest.New(t, fxmodule.Memory, fx.NopLogger,
			fx.Invoke(func(rec *core.Recorder) {
				rec.Record(context.Background(), core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c"})
			}))
		app.RequireStart().RequireStop()
	}
	var got map[string]int64
	if err := json.Unmarshal([]byte(expvar.Get(core.ExpvarName).String()), &got); err != nil ||
		got[core.CounterPersisted] < 2 {
		t.Fatalf("/debug/vars %s: %v (%v)", core.ExpvarName, got, err)
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	for want, cfg := range map[string]fxmodule.Config{
		"Config.QueueSize": {QueueSize: -1},
		"Config.RetryMax":  {RetryMin: time.Second, RetryMax: time.Millisecond},
	} {
		app := fx.New(fx.Supply(cfg), fxmodule.Memory, fx.NopLogger, fx.Invoke(func(*core.Recorder) {}))
		if err := app.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v", want, err)
		}
	}
}

// TestStartNeverWaits: on a PostgreSQL database without the host's tables
// the pass fails; start still returns at once, frames queue (the recorder
// waits for the table), and once the host's tables exist the pass
// completes in the background and every queued frame is written, without a
// restart.
func TestStartNeverWaits(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	db := pgtest.Open(t, dsn)
	s, err := postgres.New(db)
	if err != nil {
		t.Fatal(err)
	}
	var rec *core.Recorder
	var runner *migration.Runner
	app := fxtest.New(
		t, supply(s), fx.Supply(fxmodule.Config{RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond}),
		fx.Supply(testlog.Discard), fxmodule.SQL, fx.NopLogger, fx.Populate(&rec, &runner),
	)
	start := time.Now()
	app.RequireStart()
	defer app.RequireStop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("start took %v", d)
	}
	before := rec.Counters().Values()
	frame := core.Frame{TaskSessionID: "late", TaskID: "t", ToolCallID: "c", ObservedAt: t0}
	rec.Record(context.Background(), frame)
	if v := rec.Counters().Values(); v.Pending != before.Pending+1 || v.Failed != before.Failed {
		t.Fatalf("a frame before the table exists must wait: %+v", v)
	}
	if err := kandevtest.CreateTables(context.Background(), db, sqlstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	kandevtest.InsertSession(context.Background(), db, sqlstore.Tables{}, "late", "t")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := runner.Wait(ctx); err != nil {
		t.Fatalf("the pass never completed: %v\n%s", err, runner.Report())
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if v := rec.Counters().Values(); v.Persisted != before.Persisted+1 {
		t.Errorf("the queued frame was not written: %+v", v)
	}
}

// TestBackfillInTheBackground: the history is backfilled after start, the
// runner says when, the keys appear; the host's handle stays open after
// stop; a pass cancelled by stop logs no WARN.
func TestBackfillInTheBackground(t *testing.T) {
	e := testenv.SQLite().Env(t)
	ids, msgs := kandevtest.History("fx-", 3, 200, t0)
	for _, id := range ids {
		kandevtest.InsertSession(context.Background(), e.DB, e.Tables, id, id+"-task")
	}
	if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, msgs); err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	var reader report.Reader
	var runner *migration.Runner
	app := fxtest.New(
		t, supply(e.Store), fx.Supply(slog.New(slog.NewTextHandler(&logs, nil))), fxmodule.SQL, fx.NopLogger,
		fx.Populate(&reader, &runner),
	)
	app.RequireStart()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ran, err := runner.Wait(ctx)
	if err != nil || ran.Failed() || ran.Step(migration.StepBackfill).RowsInserted == 0 {
		t.Fatalf("backfill: %v\n%s", err, ran)
	}
	if a, err := reader.Activation(ctx); err != nil || a.State != report.Activated {
		t.Errorf("after the pass: %+v %v", a, err)
	}
	app.RequireStop()
	sqlDB, _ := e.DB.DB()
	if err := sqlDB.Ping(); err != nil {
		t.Errorf("the host's handle was closed on stop: %v", err)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("warnings: %s", logs.String())
	}
}

func TestSQLModuleWithoutStoreNamesIt(t *testing.T) {
	err := fx.New(fxmodule.SQL, fx.NopLogger, fx.Invoke(func(*core.Recorder) {})).Err()
	if err == nil || !strings.Contains(err.Error(), "*sqlstore.Store") {
		t.Errorf("err = %v", err)
	}
}

// TestStopNeverFailsTheHost: with PostgreSQL gone at stop (every
// connection reset, new ones refused), Stop returns within the drain
// budget and succeeds; what could not be written is counted failed and
// logged with the database's error. With a table that never became
// ready, Stop waits for nothing, succeeds, and says why.
func TestStopNeverFailsTheHost(t *testing.T) {
	t.Run("DatabaseDown", func(t *testing.T) {
		e := testenv.Postgres().Env(t)
		kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s", "t")
		proxy, dsn := faultproxy.Between(t, e.DSN)
		db, err := postgres.OpenDB(dsn)
		if err != nil {
			t.Fatal(err)
		}
		s, err := postgres.New(db)
		if err != nil {
			t.Fatal(err)
		}
		var logs testlog.Buffer
		var rec *core.Recorder
		var runner *migration.Runner
		app := fx.New(supply(s), fx.Supply(fxmodule.Config{Drain: 300 * time.Millisecond}),
			fx.Supply(slog.New(slog.NewTextHandler(&logs, nil))), fxmodule.SQL, fx.NopLogger,
			fx.Decorate(func(*core.Counters) *core.Counters { return core.NewCounters() }),
			fx.Populate(&rec, &runner))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := runner.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		proxy.Set(faultproxy.Refuse)
		for i := range 5 {
			rec.Record(ctx, core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: fmt.Sprint("c", i)})
		}
		start := time.Now()
		if err := app.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("stop took %v with a drain of 300ms", took)
		}
		if v := rec.Counters().Values(); v.Failed != 5 || v.Pending != 0 {
			t.Errorf("after stop: %+v", v)
		}
		if !strings.Contains(logs.String(), "recorder closed with frames unwritten") ||
			!strings.Contains(logs.String(), "the database's last error") {
			t.Errorf("the WARN does not give the cause:\n%s", logs.String())
		}
	})
	t.Run("NeverReady", func(t *testing.T) {
		s, err := postgres.New(pgtest.Open(t, pgtest.NewDatabase(t))) // no host tables: the pass keeps failing
		if err != nil {
			t.Fatal(err)
		}
		var logs testlog.Buffer
		var rec *core.Recorder
		app := fx.New(supply(s), fx.Supply(slog.New(slog.NewTextHandler(&logs, nil))), fxmodule.SQL, fx.NopLogger,
			fx.Decorate(func(*core.Counters) *core.Counters { return core.NewCounters() }), fx.Populate(&rec))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		rec.Record(ctx, core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c"})
		start := time.Now()
		if err := app.Stop(ctx); err != nil || time.Since(start) > 3*time.Second {
			t.Errorf("stop: %v after %v", err, time.Since(start))
		}
		if v := rec.Counters().Values(); v.Failed != 1 || v.Pending != 0 ||
			!strings.Contains(logs.String(), "never became ready") {
			t.Errorf("after stop: %+v\n%s", v, logs.String())
		}
	})
}

// TestCountersPerApp: the fx idiom for a test's own counters gives each
// app a set that starts at zero.
func TestCountersPerApp(t *testing.T) {
	for i := range 2 {
		var rec *core.Recorder
		app := fxtest.New(t, fxmodule.Memory, fx.NopLogger,
			fx.Decorate(func(*core.Counters) *core.Counters { return core.NewCounters() }), fx.Populate(&rec))
		app.RequireStart()
		if v := rec.Counters().Values(); v.Attempted != 0 {
			t.Errorf("app %d starts with %+v", i, v)
		}
		rec.Record(context.Background(), core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c"})
		app.RequireStop()
	}
}

// TestReadyAsTheApplicationRole (docs/CONTRACT.md §4.4): once the owner
// has migrated, the module wired as the README shows, running as a role
// with only the live part's privileges, becomes ready, records and absorbs
// history, on PostgreSQL and Citus, without a WARN.
func TestReadyAsTheApplicationRole(t *testing.T) {
	for _, d := range []*sqltest.Driver{testenv.Postgres(), testenv.Citus()} {
		t.Run(d.Name, func(t *testing.T) {
			e := d.Env(t)
			ctx := context.Background()
			ids, msgs := kandevtest.History("fx-", 2, 5, t0)
			for _, id := range ids {
				kandevtest.InsertSession(ctx, e.DB, e.Tables, id, id+"-task")
			}
			if err := kandevtest.InsertMessages(ctx, e.DB, e.Tables, msgs); err != nil {
				t.Fatal(err)
			}
			if r := migration.New(e.Store).Run(ctx); r.Failed() {
				t.Fatalf("the owner's pass:\n%s", r)
			}
			_, dsn := pgtest.NewRole(t, e.DB, e.DSN, func(role string) []string {
				stmts, err := sqlstore.GrantSQL(e.Tables, sqlstore.PartLive, role)
				if err != nil {
					t.Fatal(err)
				}
				return stmts
			})
			store := testenv.PostgresStore(t, dsn)
			var logs testlog.Buffer
			var rec *core.Recorder
			var runner *migration.Runner
			app := fxtest.New(t, supply(store), fx.Supply(slog.New(slog.NewTextHandler(&logs, nil))), fxmodule.SQL,
				fx.NopLogger, fx.Populate(&rec, &runner))
			app.RequireStart()
			await.Recv(t, runner.Ready(), "the module ready as the application role")
			var history core.Subagent
			if err := e.DB.Raw(`SELECT task_session_id, tool_call_id FROM task_session_subagents LIMIT 1`).
				Scan(&history).Error; err != nil {
				t.Fatal(err)
			}
			before := rec.Counters().Values() // the process's counters: every app's
			rec.Record(ctx, core.Frame{TaskSessionID: history.TaskSessionID, TaskID: "t", ExecutionID: "exec-1",
				ToolCallID: history.ToolCallID, ToolStatus: "completed"})
			flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := rec.Flush(flushCtx); err != nil {
				t.Fatal(err)
			}
			var n int64
			e.DB.Raw(`SELECT count(*) FROM task_session_subagents WHERE task_session_id = ? AND tool_call_id = ?`,
				history.TaskSessionID, history.ToolCallID).Scan(&n)
			if v := rec.Counters().Values(); v.Persisted-before.Persisted != 1 || v.Failed != before.Failed || n != 1 {
				t.Errorf("as the application role: %+v, %d rows for the pair (want history absorbed into one)", v, n)
			}
			app.RequireStop()
			if strings.Contains(logs.String(), "level=WARN") {
				t.Errorf("warnings: %s", logs.String())
			}
		})
	}
}

// TestFailedNewLeavesNothingRunning: when a constructor after the
// recorder fails, fx.New fails and never starts or stops the application;
// the module started nothing, so no writer of the recorder is left
// running (the memory store writes in Record: it has none). Goroutines are
// read from the runtime's own profile, by the writer's function.
func TestFailedNewLeavesNothingRunning(t *testing.T) {
	for _, d := range testenv.Drivers() {
		e := d.Env(t)
		t.Run(d.Name, func(t *testing.T) {
			module := fx.Options(supply(e.Store), fxmodule.SQL)
			boom := errors.New("the host's next constructor failed")
			before := writers()
			app := fx.New(module, fx.NopLogger, fx.Invoke(func(*core.Recorder) error { return boom }))
			if !errors.Is(app.Err(), boom) {
				t.Fatalf("fx.New: %v, want the host's error", app.Err())
			}
			if n := writers() - before; n != 0 {
				t.Errorf("%d writers of the recorder left running after fx.New failed", n)
			}
		})
	}
}

// writers counts the recorder's writer goroutines in this process.
func writers() int {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	return strings.Count(b.String(), "core.(*Recorder).write(")
}
