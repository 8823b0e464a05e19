// Command minimal records a few subagent frames into embedded SQLite,
// without fx, and prints the rows they became:
//
//	go -C examples run ./minimal
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/migration"
)

func main() {
	path := flag.String("db", "", "SQLite file (default: a new temporary directory)")
	flag.Parse()
	if *path == "" {
		dir, err := os.MkdirTemp("", "subagentctx-minimal-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		*path = filepath.Join(dir, "host.db")
	}
	if err := run(context.Background(), os.Stdout, *path); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, path string) error {
	// A real host already has these tables, its sessions and their
	// messages (the columns the record reads; the names are the
	// defaults, sqlstore.WithTables names others); this example makes
	// them. The library never creates them.
	db, err := sqlite.OpenDB(path)
	if err != nil {
		return err
	}
	for _, q := range []string{
		`CREATE TABLE task_sessions (id TEXT PRIMARY KEY, task_id TEXT NOT NULL)`,
		`CREATE TABLE task_session_messages (id TEXT PRIMARY KEY,
			task_session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
			task_id TEXT, turn_id TEXT NOT NULL, metadata TEXT,
			created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL)`,
		`INSERT INTO task_sessions (id, task_id) VALUES ('sess-1', 'task-1')`,
	} {
		if err := db.WithContext(ctx).Exec(q).Error; err != nil {
			return err
		}
	}

	// README: wire
	store, err := sqlite.New(db) // the host's handle; nothing touched yet
	if err != nil {
		return err
	}
	defer store.Close()
	// The migration pass at boot: table, shape, execution key, backfill.
	if report := migration.New(store).Run(ctx); report.Failed() {
		return fmt.Errorf("migration pass:\n%s", report)
	}
	rec, err := core.NewRecorder(store, core.WithCounters(core.ProcessCounters()))
	if err != nil {
		return err
	}
	// README: end
	t0 := time.Now().UTC()
	uses := int64(0)
	frames := []core.Frame{
		// A launch, then its completion (sent twice, as streams do).
		{TaskSessionID: "sess-1", TaskID: "task-1", TurnID: "turn-1", ExecutionID: "exec-1", ToolCallID: "toolu_01",
			ToolStatus: "in_progress", ObservedAt: t0,
			Payload: &core.Payload{SubagentType: "security-reviewer", Description: "Audit auth"}},
		{TaskSessionID: "sess-1", TaskID: "task-1", TurnID: "turn-1", ExecutionID: "exec-1", ToolCallID: "toolu_01",
			ToolStatus: "completed", ObservedAt: t0.Add(40 * time.Second),
			Payload: &core.Payload{
				Status:       "completed",
				Model:        "claude-sonnet-4-5",
				TotalTokens:  51234,
				DurationMs:   40210,
				ToolUseCount: &uses,
			}},
		{TaskSessionID: "sess-1", TaskID: "task-1", TurnID: "turn-1", ExecutionID: "exec-1", ToolCallID: "toolu_01",
			ToolStatus: "completed", ObservedAt: t0.Add(41 * time.Second), Payload: &core.Payload{Status: "completed"}},
		// A background launch: no usage reported, so no metric is stored.
		{TaskSessionID: "sess-1", TaskID: "task-1", TurnID: "turn-1", ExecutionID: "exec-1", ToolCallID: "toolu_02",
			ToolStatus: "completed", ObservedAt: t0.Add(time.Second),
			Payload: &core.Payload{
				SubagentType: "explorer",
				Description:  "Map the repo",
				Status:       "async_launched",
				IsAsync:      true,
			}},
	}
	// README: record
	for _, f := range frames {
		rec.Record(ctx, f) // queued: never waits on the database
	}
	// At shutdown: write what is queued (for at most 5 s), then stop the
	// writers. An error says what was given up; it is logged, never fatal.
	if err := rec.Close(ctx); err != nil {
		log.Print(err)
	}
	// README: end

	rows, err := store.ListBySession(ctx, "sess-1", core.Page{})
	if err != nil {
		return err
	}
	for _, r := range rows {
		fmt.Fprintf(
			w, "%s  %-18s tool_status=%-9s agent_status=%-14s tokens=%s tool_uses=%s async=%v\n", r.ToolCallID,
			deref(r.SubagentType), deref(r.ToolStatus), deref(r.AgentStatus), num(r.TotalTokens), num(r.ToolUseCount), r.IsAsync,
		)
	}
	fmt.Fprintf(w, "counters: %+v\n", rec.Counters().Values())
	return nil
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

func num(v *int64) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(*v)
}
