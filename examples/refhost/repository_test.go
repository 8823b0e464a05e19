package refhost

import (
	"context"
	"database/sql"
	"expvar"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the host's PostgreSQL driver, "pgx"

	"github.com/subagentctx/subagentctx/adapters/auto"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
)

// hostCounters is the host's own map, published before the swap and kept.
var hostCounters = expvar.NewMap(core.ExpvarName)

// TestSwap: on each dialect and with the host's pools as they are — one
// connection, and database/sql's default — the repository migrates the
// host's tables, absorbs the history of a subagent in flight into the
// row its completion writes, and records a new one; the host's own
// counters map stays its own.
func TestSwap(t *testing.T) {
	hosts := map[string]func(t *testing.T) (string, string){
		"sqlite": func(t *testing.T) (string, string) {
			return sqlite.DriverName, sqlite.DSN(filepath.Join(t.TempDir(), "host.db"))
		},
		"postgres": func(t *testing.T) (string, string) { return "pgx", pgtest.NewDatabase(t) },
	}
	for name, open := range hosts {
		for _, conns := range []int{1, 0} {
			t.Run(name+map[int]string{1: "/one connection", 0: "/default pool"}[conns], func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				driver, dsn := open(t)
				db, err := sql.Open(driver, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				db.SetMaxOpenConns(conns)
				hostSchema(t, ctx, db)
				repo, err := Open(ctx, db, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				at := time.Now()
				repo.OnSubagentFrame(ctx, core.Frame{TaskSessionID: "s1", TaskID: "task-1", ExecutionID: "exec-1",
					ToolCallID: "toolu_1", ToolStatus: "completed", ObservedAt: at,
					Payload: &core.Payload{Status: "completed", TotalTokens: 7}})
				repo.OnSubagentFrame(ctx, core.Frame{TaskSessionID: "s1", TaskID: "task-1", ExecutionID: "exec-1",
					ToolCallID: "toolu_2", ToolStatus: "in_progress", ObservedAt: at,
					Payload: &core.Payload{SubagentType: "reviewer"}})
				if err := repo.Close(ctx); err != nil {
					t.Fatal(err)
				}
				rows, err := repo.Subagents(ctx, "s1")
				if err != nil || len(rows) != 2 || rows[0].ToolCallID != "toolu_1" || *rows[0].SubagentType != "explorer" ||
					*rows[0].TotalTokens != 7 || rows[0].Source != core.SourceBackfill || *rows[1].SubagentType != "reviewer" {
					t.Fatalf("rows %+v, %v; want history absorbed into toolu_1's row, and toolu_2's", rows, err)
				}
				if v := repo.Counters.Values(); v.Persisted != 2 || v.Failed != 0 {
					t.Errorf("counters %+v", v)
				}
				if expvar.Get(core.ExpvarName) != hostCounters {
					t.Error("the host's own subagent_context_total was replaced")
				}
			})
		}
	}
}

// hostSchema is the host's own schema, with a subagent in flight in its
// history.
func hostSchema(t *testing.T, ctx context.Context, db *sql.DB) {
	t.Helper()
	s, err := auto.NewSQL(db)
	if err != nil {
		t.Fatal(err)
	}
	tables := sqlstore.Tables{}
	if err := kandevtest.CreateTables(ctx, s.DB(), tables); err != nil {
		t.Fatal(err)
	}
	if err := kandevtest.InsertSession(ctx, s.DB(), tables, "s1", "task-1"); err != nil {
		t.Fatal(err)
	}
	meta := kandevtest.Subagent("toolu_1", "in_progress", &core.Payload{SubagentType: "explorer"}).JSON()
	created := time.Now().Add(-time.Hour)
	if err := kandevtest.InsertMessages(ctx, s.DB(), tables, []kandevtest.Message{{ID: "m1", TaskSessionID: "s1",
		TaskID: "task-1", TurnID: "turn-1", Metadata: &meta, CreatedAt: created, UpdatedAt: created}}); err != nil {
		t.Fatal(err)
	}
}
