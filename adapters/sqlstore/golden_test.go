package sqlstore_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/migration"
)

var update = flag.Bool("update", false, "rewrite testdata/<dialect>/*.sql from the code")

// TestGoldenStatements renders every statement the store runs, whole, for
// each dialect, into testdata/<dialect>/*.sql, so that a reviewer reads
// each one as the database receives it (the code assembles them from the
// column declaration and the dialect's fragments). A statement that
// changes fails here until the golden files are rewritten with
//
//	go test ./adapters/sqlstore -run TestGoldenStatements -update
//
// and the change is reviewed in the diff.
func TestGoldenStatements(t *testing.T) {
	capture := time.Date(2026, 8, 12, 23, 10, 0, 500001001, time.UTC)
	for _, d := range []*sqltest.Driver{testenv.SQLite(), testenv.Postgres()} {
		t.Run(d.Name, func(t *testing.T) {
			e := d.Env(t)
			s := e.Store
			health, whole := s.HealthSQL(capture, false, false)[0], s.HealthSQL(capture, false, true)[0]
			list, listArgs := s.ListSQL("task_session_id", "sess-1", core.Page{})
			keyset, keysetArgs := s.ListSQL(
				"turn_id",
				"turn-1",
				core.Page{
					Limit: 100,
					After: &core.Cursor{ObservedAt: capture, ToolCallID: "toolu_01", AgentExecutionID: "exec-1"},
				},
			)
			where := " WHERE task_session_id = ?"
			rows, messages := s.FirstActivitySQL(where, time.Time{})
			rowsBefore, messagesBefore := s.FirstActivitySQL(" WHERE task_session_id IN (?, ?)", capture)
			sessions, sessionsArgs := s.SessionsSQL(report.SessionQuery{Since: capture, Until: capture.Add(time.Hour),
				Prefix: "sess-", After: &report.SessionKey{LastObservedAt: capture, TaskSessionID: "sess-9"}, Limit: 50})
			overview, overviewArgs := s.OverviewSQL(report.OverviewQuery{Since: capture, Until: capture.Add(time.Hour)})
			merge, remove := s.RepairSQL()
			cursor := &core.Cursor{ObservedAt: capture, ToolCallID: "toolu_01", AgentExecutionID: "exec-1"}
			starts, startsArgs := s.TurnStartsSQL("sess-1", cursor, false, 26)
			back, backArgs := s.TurnStartsSQL("sess-1", cursor, true, 26)
			turnRows, turnRowsArgs := s.TurnRowsSQL("sess-1", "turn-1", "turn-2")
			files := map[string]string{
				"session_turns.sql": "-- the first rows of the next turns\n" + withArgs(starts, startsArgs) +
					"\n-- of the turns before a cursor\n" + withArgs(back, backArgs) +
					"\n-- every row of the page's turns (two, and the rows without one)\n" +
					withArgs(turnRows, turnRowsArgs),
				"schema.sql": strings.Join(s.SchemaSQL(sqlstore.DefaultMetaTable), ";\n\n") + ";\n",
				"upsert.sql": "-- per row; the arguments are storekit.Columns' values in order\n" +
					numbered(s.UpsertStatement(), s.Upserting().Args) + ";\n\n" +
					"-- per row that reports none of the sparse columns (the run's usage, the agent's own start);\n" +
					"-- the arguments are the values of the others, in the same order\n" +
					numbered(s.LeanUpsert().Statement, s.LeanUpsert().Args) + ";\n",
				"list_by_session.sql":   withArgs(list, listArgs),
				"list_keyset.sql":       withArgs(keyset, keysetArgs),
				"subagent_messages.sql": s.MessagesSQL() + ";\n",
				"health.sql":            withArgs(health.SQL, health.Args),
				"health_whole.sql":      withArgs(whole.SQL, whole.Args),
				"stats.sql": "-- the aggregates\n" + s.StatsSQL(where) + ";\n\n" +
					"-- fan-out per turn\n" + s.FanOutSQL(where) + ";\n\n" +
					"-- first activity: rows\n" + rows + ";\n\n" +
					"-- first activity: messages\n" + messages + ";\n\n" +
					"-- the sessions listed: activity before the coverage bound, rows\n" + rowsBefore + ";\n\n" +
					"-- and messages\n" + messagesBefore + ";\n\n" +
					"-- the whole store: the sessions by verdict, counted where they are\n" +
					withArgs(s.CoverageCountsSQL(capture)),
				"upgrade.sql":   upgradeStatements(t, d),
				"idle_pass.sql": idlePassStatements(t, d),
				"sessions.sql":  withArgs(sessions, sessionsArgs),
				"overview.sql":  withArgs(overview, overviewArgs),
				"export.sql": withArgs(s.ExportSQL(report.ExportQuery{Since: capture, Until: capture.Add(time.Hour),
					After: &report.ExportKey{TaskSessionID: "sess-1", ID: "0198a4b0-0000-7000-8000-000000000001"}})) +
					"\n-- a window open at its end (export --since)\n" +
					withArgs(s.ExportSQL(report.ExportQuery{Since: capture})),
				"repair.sql": "-- step 4, in the shape step's transaction: the pairs an earlier build doubled; " +
					"the update takes updated_at\n" + merge + ";\n\n" + remove + ";\n",
				"seam_check.sql": "-- every pass once the shape holds, on one server: a probe of the unchecked rows' index; " +
					"when it finds one, the rest in one transaction\n" + strings.Join(s.SeamSQL(), ";\n\n") + ";\n",
			}
			files["backfill.sql"] = backfillText(s.Form(false), s.BackfillSQL(false))
			if a := s.Upserting().Absorb; a != nil {
				files["absorb.sql"] = "-- first in a write's transaction of more than one row: its pairs' locks, in one order " +
					"(two arrays, one entry per row)\n" + a.Lock + ";\n\n" +
					"-- before the upserts: the planner's settings kept and set\n" +
					a.Plan + ";\n\n-- history moved to the rows that absorb it (four arrays, a row per pair)\n" +
					a.Statement + ";\n\n-- the settings as they were\n" + a.Restore + ";\n"
			}
			if d.Name == "postgres" {
				sharded := s.ShardedSchemaSQL()[len(s.SchemaSQL(sqlstore.DefaultMetaTable))-len(s.Upserting().Schema):]
				files["schema_sharded.sql"] = "-- on a sharded table, what the upsert needs there in place of the one " +
					"server's\n" + strings.Join(sharded, ";\n\n") + ";\n"
				wave, err := s.WaveSQL(2)
				if err != nil {
					t.Fatal(err)
				}
				files["upsert_wave.sql"] = "-- on a sharded table, a wave of two rows (of two pairs); " +
					"the arguments are storekit.Columns' values in order, row after row\n" + wave + ";\n"
				files["backfill_sharded.sql"] = backfillText(s.Form(true), s.BackfillSQL(true))
				window := report.OverviewQuery{Since: capture, Until: capture.Add(time.Hour)}
				explorer := "explorer"
				groups, groupsArgs := s.OverviewGroupsSQL(window)
				histogram, histogramArgs := s.OverviewHistogramSQL(window, "subagent_type", []*string{&explorer, nil})
				bucket, bucketArgs := s.OverviewBucketSQL(window, "subagent_type", explorer, 5*256+73)
				files["overview_sharded.sql"] = "-- the groups of the four breakdowns at once, per combination of their values\n" +
					withArgs(groups, groupsArgs) + "\n-- the listed groups' durations per bucket\n" +
					withArgs(histogram, histogramArgs) + "\n-- the distinct durations of the buckets that hold a rank\n" +
					withArgs(bucket, bucketArgs)
			}
			for name, text := range files {
				check(t, filepath.Join("testdata", d.Name, name), text)
			}
			noStale(t, filepath.Join("testdata", d.Name, "*.sql"), func(name string) bool { _, ok := files[name]; return ok })
		})
	}
}

// backfillText is a backfill's statements in the order they run: a stage
// (where the dialect stages) before the transaction, then the
// transaction, opened as the dialect opens it; the merge and the insert
// take updated_at.
func backfillText(form sqldialect.BackfillForm, stmts []string) string {
	begin := form.Begin
	if begin == "" {
		begin = "BEGIN"
	}
	var before, in, after []string
	for i, q := range stmts {
		switch {
		case form.Staged && i < 2:
			before = append(before, q)
		case form.Staged && i == len(stmts)-1:
			after = append(after, q)
		default:
			in = append(in, q)
		}
	}
	all := append(
		append(
			append(before, begin),
			slices.DeleteFunc(append([]string{form.Lock}, form.Plan...), func(q string) bool { return q == "" })...),
		in...)
	all = append(append(all, "COMMIT"), after...)
	return "-- the merge and the insert take updated_at\n" + strings.Join(all, ";\n\n") + ";\n"
}

// withArgs appends a statement's bound arguments as a comment.
func withArgs(q string, args []any) string {
	var b strings.Builder
	b.WriteString(q + ";\n-- arguments:")
	for _, a := range args {
		fmt.Fprintf(&b, " %v", a)
	}
	return b.String() + "\n"
}

// upgradeStatements runs the migration pass on the first draft's table and
// returns the upgrade's statements as the database received them.
func upgradeStatements(t *testing.T, d *sqltest.Driver) string {
	e := d.Env(t)
	d.LegacyTable(t, e.DB)
	var log sqltest.StatementLog
	s, err := d.New(e.DB.Session(&gorm.Session{Logger: &log}))
	if err != nil {
		t.Fatal(err)
	}
	log.Start()
	r := migration.New(s, migration.WithHook(func(stage string) error {
		if stage == "before commit" {
			log.Stop()
		}
		return nil
	})).Prepare(context.Background())
	if r.Failed() {
		t.Fatalf("upgrade: %s", r)
	}
	schema := map[string]bool{}
	meta, err := s.MetaTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range s.SchemaSQL(meta) {
		schema[q] = true // the table step's, not the upgrade's
	}
	var out []string
	for _, q := range log.Statements() {
		if schema[q] || strings.HasPrefix(q, "DO $do$") || strings.HasPrefix(q, "SELECT") || strings.HasPrefix(q, "SHOW") ||
			strings.HasPrefix(q, "PRAGMA") || strings.Contains(q, "pragma_") || strings.Contains(q, "to_regclass") ||
			strings.Contains(q, "subagent_context_schema_v") {
			continue // the schema's own statements, catalog reads, version keys
		}
		out = append(out, instant.ReplaceAllString(q, "?"))
	}
	return "-- the first draft's table brought to its declared shape in one transaction " +
		"(statements between catalog reads)\n" +
		strings.Join(out, ";\n\n") + ";\n"
}

// idlePassStatements runs the migration pass on a table an earlier pass
// brought up to date and returns the statements the second pass sent
// through a new store (its first use's checks among them): what every
// boot costs (AC-18, a second pass is a no-op), each one asked once.
func idlePassStatements(t *testing.T, d *sqltest.Driver) string {
	e := d.Env(t)
	if r := migration.New(e.Store, migration.WithLogger(testlog.Discard)).Run(context.Background()); r.Failed() {
		t.Fatalf("the first pass: %s", r)
	}
	var log sqltest.StatementLog
	s, err := d.New(e.DB.Session(&gorm.Session{Logger: &log}))
	if err != nil {
		t.Fatal(err)
	}
	log.Start()
	if r := migration.New(s, migration.WithLogger(testlog.Discard)).Run(context.Background()); r.Failed() {
		t.Fatalf("the second pass: %s", r)
	} else if r.Step(migration.StepBackfill).Status != migration.Skipped {
		t.Fatalf("the second pass backfilled: %s", r)
	}
	log.Stop()
	sent := log.Statements()
	seen := map[string]bool{}
	for _, q := range sent {
		if seen[q] {
			t.Errorf("a pass on an up-to-date table sent this twice:\n%s", q)
		}
		seen[q] = true
	}
	return fmt.Sprintf("-- a pass on an up-to-date table, a new store's first use: "+
		"%d statements besides the pass's lock, in order\n", len(sent)) + strings.Join(sent, ";\n\n") + ";\n"
}

// instant is a time the logger wrote into a statement for its argument.
var instant = regexp.MustCompile(`['"]\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?['"]`)

// noStale fails for each golden file matching glob that no statement
// renders any more (rendered says which names are).
func noStale(t *testing.T, glob string, rendered func(name string) bool) {
	t.Helper()
	stored, _ := filepath.Glob(glob)
	for _, f := range stored {
		if !rendered(filepath.Base(f)) {
			t.Errorf("%s renders no statement the store runs: remove it", f)
		}
	}
}

func check(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf(
			"%s is stale: the code now renders\n%s\n"+
				"(run go test ./adapters/sqlstore -run TestGoldenStatements -update, and review the diff)",
			path,
			got,
		)
	}
}

// numbered is an upsert whose placeholders are positional (args: the
// column each takes) as the same statement with numbered ones (?N: the
// N-th column's value), the form the SQLite dialect builds before it gives
// the pure-Go driver the positional one: the golden statement is the same
// whichever driver the test is built with.
func numbered(q string, args []int) string {
	if args == nil {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			fmt.Fprintf(&b, "?%d", args[n]+1)
			n++
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
