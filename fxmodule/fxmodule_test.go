package fxmodule_test

import (
	"context"
	"expvar"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/fxmodule"
	"github.com/subagentctx/subagentctx/internal/pgtest"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

var t0 = time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)

// host is what a host application's code looks like: it receives the
// Recorder and the Store from the graph and knows nothing of adapters.
type host struct {
	rec    *core.Recorder
	store  core.Store
	reader core.Reader
}

func newHost(rec *core.Recorder, store core.Store, reader core.Reader) *host {
	return &host{rec: rec, store: store, reader: reader}
}

// configs returns one Config per adapter; the SQL ones come with
// Kandev-shaped host tables and their session.
func configs(t *testing.T) map[string]fxmodule.Config {
	t.Helper()
	ctx := context.Background()
	out := map[string]fxmodule.Config{"memory": {Adapter: fxmodule.Memory}}
	path := filepath.Join(t.TempDir(), "host.db")
	db, err := sqlite.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := kandevtest.CreateTables(ctx, db, core.HostTables{}); err != nil {
		t.Fatal(err)
	}
	if err := kandevtest.InsertSession(ctx, db, core.HostTables{}, "fx-sess", "fx-task"); err != nil {
		t.Fatal(err)
	}
	out["sqlite"] = fxmodule.Config{SQLitePath: path} // Adapter defaults to SQLite
	e := testenv.SQLite(t)
	kandevtest.InsertSession(ctx, e.DB, e.Tables, "fx-sess", "fx-task")
	out["gorm"] = fxmodule.Config{Adapter: fxmodule.GORM, DB: e.DB}
	if pgtest.Available() {
		dsn := pgtest.NewDatabase(t)
		pg := pgtest.Open(t, dsn)
		kandevtest.CreateTables(ctx, pg, core.HostTables{})
		kandevtest.InsertSession(ctx, pg, core.HostTables{}, "fx-sess", "fx-task")
		out["postgres"] = fxmodule.Config{Adapter: fxmodule.Postgres, PostgresDSN: dsn}
	}
	return out
}

// TestSwapAdaptersByConfig: the same host code on every adapter.
func TestSwapAdaptersByConfig(t *testing.T) {
	if !pgtest.Available() {
		t.Run("postgres", func(t *testing.T) { pgtest.AdminDSN(t) }) // skips, or fails under CI=true
	}
	for name, cfg := range configs(t) {
		t.Run(name, func(t *testing.T) {
			opts := []fx.Option{fx.Supply(cfg), fxmodule.Module, fx.Provide(newHost), fx.NopLogger}
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
			v := h.rec.Counters().Values()
			if v.Failed != before.Failed || v.Persisted-before.Persisted != int64(len(frames)-1) || v.SkippedNoIdentity-before.SkippedNoIdentity != 1 {
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
			if _, err := h.reader.Stats(ctx, core.StatsQuery{TaskSessionID: "fx-sess"}); err != nil {
				t.Error(err)
			}
			app.RequireStop()
		})
	}
}

func TestCountersPublishedOnceAcrossApps(t *testing.T) {
	for range 2 {
		app := fxtest.New(t, fx.Supply(fxmodule.Config{Adapter: fxmodule.Memory}), fxmodule.Module, fx.NopLogger,
			fx.Invoke(func(rec *core.Recorder) {
				rec.Record(context.Background(), core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c"})
			}))
		app.RequireStart().RequireStop()
	}
	m, ok := expvar.Get(core.ExpvarName).(*expvar.Map)
	if !ok || m.Get(core.CounterPersisted) == nil || !strings.Contains(m.String(), `"attempted"`) {
		t.Fatalf("/debug/vars has no %s map: %v", core.ExpvarName, expvar.Get(core.ExpvarName))
	}
	if m != core.ProcessCounters().Map() {
		t.Error("the published map is not the counters the recorders use")
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	for want, cfg := range map[string]fxmodule.Config{
		"Config.Adapter":     {Adapter: "mysql"},
		"Config.PostgresDSN": {Adapter: fxmodule.Postgres},
		"Config.DB":          {Adapter: fxmodule.GORM},
		"Config.Tables":      {Tables: core.HostTables{Sessions: "drop table;"}},
	} {
		app := fx.New(fx.Supply(cfg), fxmodule.Module, fx.NopLogger, fx.Invoke(func(*core.Recorder) {}))
		if err := app.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v", want, err)
		}
	}
}

// TestFailedStepNeverFailsStart: on PostgreSQL without the host's sessions
// table, creating the table fails; start still succeeds, writes count as
// failed, and once the table can be created (in the background) recording
// works without a restart.
func TestFailedStepNeverFailsStart(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	db := pgtest.Open(t, dsn)
	var rec *core.Recorder
	app := fxtest.New(t, fx.Supply(fxmodule.Config{Adapter: fxmodule.Postgres, PostgresDSN: dsn, PrepareRetry: 20 * time.Millisecond}),
		fxmodule.Module, fx.NopLogger, fx.Populate(&rec))
	app.RequireStart()
	defer app.RequireStop()
	before := rec.Counters().Values()
	frame := core.Frame{TaskSessionID: "late", TaskID: "t", ToolCallID: "c", ObservedAt: t0}
	rec.Record(context.Background(), frame)
	if v := rec.Counters().Values(); v.Failed != before.Failed+1 {
		t.Fatalf("write before the table exists: %+v", v)
	}
	if err := kandevtest.CreateTables(context.Background(), db, core.HostTables{}); err != nil {
		t.Fatal(err)
	}
	kandevtest.InsertSession(context.Background(), db, core.HostTables{}, "late", "t")
	deadline := time.Now().Add(20 * time.Second)
	for {
		rec.Record(context.Background(), frame)
		v := rec.Counters().Values()
		if v.Persisted > before.Persisted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recording never resumed: %+v", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBackfillRunsAfterStart: the history is backfilled in the background
// and the keys appear; the host's own *gorm.DB stays open after stop.
func TestBackfillRunsAfterStartAndHostDBStaysOpen(t *testing.T) {
	e := testenv.SQLite(t)
	ids, msgs := kandevtest.History("fx-", 3, 200, t0)
	for _, id := range ids {
		kandevtest.InsertSession(context.Background(), e.DB, e.Tables, id, id+"-task")
	}
	if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, msgs); err != nil {
		t.Fatal(err)
	}
	var reader core.Reader
	app := fxtest.New(t, fx.Supply(fxmodule.Config{Adapter: fxmodule.GORM, DB: e.DB}), fxmodule.Module, fx.NopLogger, fx.Populate(&reader))
	app.RequireStart()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, err := reader.Activation(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if a.State == core.Activated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backfill never activated the store: %+v", a)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, err := reader.Stats(context.Background(), core.StatsQuery{})
	if err != nil || st.Backfill == 0 {
		t.Errorf("stats after backfill: %+v %v", st, err)
	}
	app.RequireStop()
	sqlDB, _ := e.DB.DB()
	if err := sqlDB.Ping(); err != nil {
		t.Errorf("the host's *gorm.DB was closed on stop: %v", err)
	}
}
