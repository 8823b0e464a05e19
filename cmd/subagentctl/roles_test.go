package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
	"github.com/subagentctx/subagentctx/migration"
)

// TestAC17_RolesAsProductionRunsThem (docs/CONTRACT.md §4.4): on
// PostgreSQL and Citus the owner migrates; an application role the test
// creates, holding exactly what `grants --part live` and `--part read`
// print, records (absorbing history: by an update on one server, by the
// trigger on Citus, which deletes as its owner),
// lists, reads statistics, health and the export, and boots the pass at
// the live path's start ready without a single DDL statement; without
// UPDATE it is refused at boot, naming the privilege and the table.
func TestAC17_RolesAsProductionRunsThem(t *testing.T) {
	for _, d := range []*sqltest.Driver{testenv.Postgres(), testenv.Citus()} {
		t.Run(d.Name, func(t *testing.T) {
			e := d.Env(t)
			ctx := context.Background()
			kandevtest.InsertSession(ctx, e.DB, e.Tables, "s1", "task-1")
			t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
			meta := kandevtest.Subagent("toolu_h", "in_progress", &core.Payload{SubagentType: "explorer"}).JSON()
			if err := kandevtest.InsertMessages(ctx, e.DB, e.Tables, []kandevtest.Message{
				{ID: "m1", TaskSessionID: "s1", TaskID: "task-1", TurnID: "turn-1", Metadata: &meta, CreatedAt: t0},
			}); err != nil {
				t.Fatal(err)
			}
			cli(t, "", "--db", e.DSN, "migrate").want(t, 0)

			// The role holds exactly what the command prints for its parts.
			role, app := pgtest.NewRole(t, e.DB, e.DSN, func(role string) []string {
				var out []string
				for _, part := range []string{"live", "read"} {
					stdout := cli(t, "", "--db", e.DSN, "grants", "--role", role, "--part", part).want(t, 0).stdout
					out = append(out, printed(stdout)...)
				}
				return out
			})

			// The pass at the live path's boot, as the application role:
			// ready, and no DDL sent.
			var log sqltest.StatementLog
			log.Start()
			appDB, err := postgres.OpenDB(app)
			if err != nil {
				t.Fatal(err)
			}
			appDB.Logger = &log
			if sqlDB, err := appDB.DB(); err == nil {
				defer sqlDB.Close()
			}
			store, err := postgres.New(appDB)
			if err != nil {
				t.Fatal(err)
			}
			runner := migration.NewRunner(migration.New(store))
			runner.Start(ctx)
			await.Recv(t, runner.Ready(), "the application role's pass ready")
			report, err := runner.Wait(ctx)
			if err != nil || report.Failed() {
				t.Fatalf("the pass as the application role: %v\n%s", err, report)
			}
			if sent := ddl(log.Statements()); len(sent) > 0 {
				t.Errorf("the application role's pass sent DDL on a migrated table:\n%s", strings.Join(sent, "\n"))
			}

			frames := jsonFrame("s1", "toolu_h", "exec-1", "completed", t0.Add(time.Minute),
				`{"description":"","prompt":"","subagent_type":"","total_tokens":1200}`) + "\n" +
				jsonFrame("s1", "toolu_2", "exec-1", "in_progress", t0.Add(2*time.Minute), `{}`) + "\n"
			r := cli(t, frames, "--db", app, "record").want(t, 0)
			if !strings.Contains(r.stdout, "persisted 2 ") {
				t.Errorf("record as the application role: %s", r.stdout)
			}
			var rows []core.Subagent
			r = cli(t, "", "--db", app, "list", "--session", "s1", "--json").want(t, 0)
			if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[0].ToolCallID != "toolu_h" || rows[0].AgentExecutionID != "exec-1" ||
				rows[0].Source != core.SourceBackfill || !rows[0].ObservedAt.Equal(t0) ||
				rows[0].TotalTokens == nil || *rows[0].TotalTokens != 1200 {
				t.Errorf("rows as the application role: %s, want history absorbed into exec-1's row", r.stdout)
			}
			cli(t, "", "--db", app, "health").want(t, 0)
			cli(t, "", "--db", app, "stats").want(t, 0)
			if r := cli(t, "", "--db", app, "export").want(t, 0); strings.Count(r.stdout, "\n") != 2 {
				t.Errorf("export as the application role: %q", r.stdout)
			}

			// Without UPDATE: told once, at boot, naming what is missing.
			if err := e.DB.Exec(`REVOKE UPDATE ON task_session_subagents FROM "` + role + `"`).Error; err != nil {
				t.Fatal(err)
			}
			r = cli(t, frames, "--db", app, "record").want(t, 2)
			if !strings.Contains(r.stderr, "lacks a privilege: UPDATE on task_session_subagents") ||
				strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("record without UPDATE: %s", r.stderr)
			}
			if rep := migration.New(store).Run(ctx); !rep.Failed() ||
				!strings.Contains(rep.String(), "UPDATE on task_session_subagents") {
				t.Errorf("the pass without UPDATE:\n%s", rep)
			}
		})
	}
}

// printed are the statements the grants command printed (its comment
// lines skipped).
func printed(out string) []string {
	var stmts []string
	for _, line := range strings.Split(out, "\n") {
		if q := strings.TrimSuffix(line, ";"); q != "" && !strings.HasPrefix(q, "--") {
			stmts = append(stmts, q)
		}
	}
	return stmts
}

// ddl is the DDL and writes among statements, each cut to 80 bytes.
func ddl(statements []string) []string {
	var out []string
	for _, q := range statements {
		switch w := strings.ToUpper(strings.Fields(q + " x")[0]); w {
		case "CREATE", "ALTER", "DROP", "DO", "INSERT", "UPDATE", "DELETE", "LOCK":
			out = append(out, fmt.Sprintf("%s…", q[:min(len(q), 80)]))
		}
	}
	return out
}

// TestEveryCommandWithItsPartOnly (docs/CONTRACT.md §4.4): on PostgreSQL
// each command runs as a role holding exactly what `grants --part P`
// prints for its part, and nothing else: record (live); list, stats,
// activation, health, export and serve (read); prune (prune); import
// (import, into a table its owner migrated). A role of another part is
// refused by name.
func TestEveryCommandWithItsPartOnly(t *testing.T) {
	d := testenv.Postgres()
	src, dst := d.Env(t), d.Env(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, e := range []*sqltest.Env{src, dst} {
		kandevtest.InsertSession(ctx, e.DB, e.Tables, "s1", "task-1")
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0)
	}
	as := func(e *sqltest.Env, part string) string {
		_, dsn := pgtest.NewRole(t, e.DB, e.DSN, func(role string) []string {
			return printed(cli(t, "", "--db", e.DSN, "grants", "--role", role, "--part", part).want(t, 0).stdout)
		})
		return dsn
	}
	live, read, prune, imp := as(src, "live"), as(src, "read"), as(src, "prune"), as(dst, "import")

	frames := jsonFrame("s1", "toolu_1", "exec-1", "completed", now.Add(-time.Hour), `{"total_tokens":5}`) + "\n" +
		jsonFrame("s1", "toolu_2", "exec-1", "in_progress", now.Add(-time.Minute), `{}`) + "\n"
	if r := cli(t, frames, "--db", live, "record").want(t, 0); !strings.Contains(r.stdout, "persisted 2 ") {
		t.Errorf("record as live: %s", r.stdout)
	}
	if r := cli(t, frames, "--db", read, "record").want(t, 2); !strings.Contains(r.stderr, "lacks a privilege") {
		t.Errorf("record as read: %s", r.stderr)
	}
	for _, args := range [][]string{{"list", "--session", "s1"}, {"stats"}, {"activation"}, {"health"}} {
		cli(t, "", append([]string{"--db", read}, args...)...).want(t, 0)
	}
	exported := cli(t, "", "--db", read, "export", "--keys").want(t, 0).stdout
	if strings.Count(exported, "\n") != 3 {
		t.Errorf("export --keys as read: %q", exported)
	}
	base, stop := serve(t, "", "--db", read)
	res, err := http.Get(base + "?range=all")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	stop(syscall.SIGTERM)
	if res.StatusCode != http.StatusOK {
		t.Errorf("serve as read: %d", res.StatusCode)
	}

	if r := cli(t, exported, "--db", imp, "import", "--json").want(t, 0); !strings.Contains(r.stdout, `"rows": 2`) {
		t.Errorf("import as import: %s", r.stdout)
	}
	if r := cli(t, "", "--db", dst.DSN, "list", "--session", "s1").want(t, 0); strings.Count(r.stdout, "toolu_") != 2 {
		t.Errorf("the imported rows: %s", r.stdout)
	}

	r := cli(t, "", "--db", prune, "prune", "--before", time.Now().UTC().Format(time.RFC3339Nano), "--json")
	if r.want(t, 0); !strings.Contains(r.stdout, `"deleted": 2`) {
		t.Errorf("prune as prune: %s", r.stdout)
	}
	if r := cli(t, "", "--db", read, "prune", "--before", "1h").want(t, 2); !strings.Contains(r.stderr,
		"lacks a privilege") {
		t.Errorf("prune as read: %s", r.stderr)
	}
}
