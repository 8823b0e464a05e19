package sqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// TestAbsorbIsIndexProbesWhateverTheStatistics (docs/CONTRACT.md §8.5): on
// PostgreSQL a write's transaction absorbs history in one statement before
// its upserts, and the table has no trigger. On a table analysed while
// empty, autovacuum off, then grown to a long session and a large history,
// a plan of that statement cached while the table was small would read
// history whole for every write; under the planner's settings the write
// runs it with, it is planned for the table as it is — a probe of a unique
// key per pair, nothing read whole — and the settings are as they were
// after it.
func TestAbsorbIsIndexProbesWhateverTheStatistics(t *testing.T) {
	e := testenv.Postgres().Env(t)
	ctx := context.Background()
	a := e.Store.Upserting().Absorb
	var triggers int64
	e.DB.Raw(`SELECT count(*) FROM pg_trigger WHERE tgrelid = 'task_session_subagents'::regclass
		AND NOT tgisinternal`).Scan(&triggers)
	if triggers != 0 {
		t.Errorf("%d triggers on the table: an insert pays for any", triggers)
	}
	e.Exec(t, `ALTER TABLE task_session_subagents SET (autovacuum_enabled = false)`)
	e.Exec(t, `ANALYZE task_session_subagents`)
	if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, "s", "task-s"); err != nil {
		t.Fatal(err)
	}
	insert := `INSERT INTO task_session_subagents (id, task_session_id, task_id, agent_execution_id, tool_call_id,
		is_async, source, observed_at, updated_at) `
	e.Exec(t, insert+`SELECT 'l' || i, 's', 'task-s', 'e', 'live-' || i, 0, 'live', now(), now()
		FROM generate_series(1, 12) AS i`)
	explain := func(db *gorm.DB) string {
		var lines []string
		q := `EXPLAIN (COSTS OFF) EXECUTE absorb ('{s,s}', '{tc-7,live-3}', '{e2,e2}', '{x,y}')`
		if err := db.Raw(q).Scan(&lines).Error; err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	var cached, planned, after string
	err := e.DB.Connection(func(conn *gorm.DB) error {
		if err := conn.Exec(`PREPARE absorb (text[], text[], text[], text[]) AS ` + a.Statement).Error; err != nil {
			return err
		}
		for range 6 { // the connection's plan, cached while the table is small
			explain(conn)
		}
		e.Exec(t, insert+`SELECT 'h' || i, 's', 'task-s', 'unknown', 'tc-' || i, 0, 'backfill', now(), now()
			FROM generate_series(1, 20000) AS i
			UNION ALL SELECT 'm' || i, 's', 'task-s', 'e', 'more-' || i, 0, 'live', now(), now()
			FROM generate_series(1, 30000) AS i`)
		cached = explain(conn)
		err := conn.Transaction(func(tx *gorm.DB) error {
			for _, q := range []string{`SET LOCAL enable_hashjoin = on`, a.Plan} {
				if err := tx.Exec(q).Error; err != nil {
					return err
				}
			}
			planned = explain(tx)
			if err := tx.Exec(a.Restore).Error; err != nil {
				return err
			}
			return tx.Raw(`SELECT concat_ws(',', current_setting('enable_seqscan'), current_setting('enable_hashjoin'),
				current_setting('enable_mergejoin'), current_setting('plan_cache_mode'))`).Scan(&after).Error
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"Seq Scan", "Hash", "Merge", "Bitmap"} {
		if strings.Contains(planned, bad) {
			t.Errorf("under the write's settings the plan reads more than a key per pair (%s):\n%s", bad, planned)
		}
	}
	lines := strings.Split(planned, "\n")
	var conds []string
	for i, l := range lines {
		if !strings.Contains(l, "Scan") || !strings.Contains(l, " on task_session_subagents") {
			continue
		}
		if i+1 == len(lines) || !strings.Contains(lines[i+1], "Index Cond: ((task_session_id = ") {
			t.Errorf("under the write's settings a read of the table probes no key:\n%s", planned)
			continue
		}
		conds = append(conds, strings.TrimSpace(lines[i+1]))
	}
	want := []string{
		"(agent_execution_id = f.execution) AND (tool_call_id = f.tool_call)", // its own key
		"(id = f.row_id)",                                    // its id's holder
		"(tool_call_id = f.tool_call)",                       // history
		"(task_session_id = a.session) AND (id = a.history)", // the row moved
	}
	if len(conds) != len(want) {
		t.Errorf("under the write's settings %d probes, want %d:\n%s", len(conds), len(want), planned)
	}
	for _, w := range want {
		if !strings.Contains(planned, w) {
			t.Errorf("under the write's settings no probe by %s:\n%s", w, planned)
		}
	}
	if after != "on,on,on,auto" {
		t.Errorf("the settings after the absorbing: %s, want those before it (on,on,on,auto)", after)
	}
	if !strings.Contains(cached, "Seq Scan") {
		t.Logf("the plan cached while the table was small reads no table whole here:\n%s", cached)
	}
	// And the store's own write, on the grown table, absorbs as ever.
	row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "task-s", ExecutionID: "e2", ToolCallID: "tc-7",
		ToolStatus: "completed", ObservedAt: time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)})
	if err := e.Store.Upsert(ctx, row); err != nil {
		t.Fatal(err)
	}
	var got struct{ ID, Source, AgentExecutionID string }
	e.DB.Raw(`SELECT id, source, agent_execution_id FROM task_session_subagents
		WHERE task_session_id = 's' AND tool_call_id = 'tc-7'`).Scan(&got)
	if got.ID != "h7" || got.Source != string(core.SourceBackfill) || got.AgentExecutionID != "e2" {
		t.Errorf("the pair's row after a live frame: %+v, want history's (h7, backfill) under e2", got)
	}
}
