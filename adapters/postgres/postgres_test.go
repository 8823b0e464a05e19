package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
	"github.com/subagentctx/subagentctx/migration"
)

// TestMain runs the package with a non-UTC local zone; every connection also
// uses a non-UTC session time zone (pgtest.SessionTimeZone).
func TestMain(m *testing.M) {
	time.Local = time.FixedZone("UTC-07", -7*3600)
	os.Exit(m.Run())
}

// TestSQL runs the dialect suite on PostgreSQL, again on a database whose
// collation is ICU's, on a table an operator hash-partitioned by session,
// and on a Citus cluster (skipped, saying so, without one).
func TestSQL(t *testing.T) {
	for _, d := range []*sqltest.Driver{
		testenv.Postgres(), testenv.PostgresICU(), testenv.PostgresPartitioned(), testenv.Citus(),
	} {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			e := d.Env(t)
			var tz string
			e.DB.Raw(`SHOW TimeZone`).Scan(&tz)
			if tz != pgtest.SessionTimeZone {
				t.Fatalf("session time zone is %q, want %q", tz, pgtest.SessionTimeZone)
			}
			sqltest.Exercise(t, d)
		})
	}
}

func FuzzMerge(f *testing.F) { sqltest.FuzzMerge(f, testenv.Postgres()) }

func TestRedact(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://alice:s3cr%40t@db:5432/app?sslmode=disable":  "postgres://alice:xxxxx@db:5432/app?sslmode=disable",
		"postgresql://bob@db/app?password=hunter2":               "postgresql://bob@db/app?password=xxxxx",
		"host=db user=carol password='it\\'s secret' dbname=app": "host=db user=carol password=xxxxx dbname=app",
		"host=db user=dave password=plain dbname=app":            "host=db user=dave password=xxxxx dbname=app",
		"postgres://erin@db/app":                                 "postgres://erin@db/app",
	} {
		if got := postgres.Redact(dsn); got != want {
			t.Errorf("Redact(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// TestBackfillUnderParallelPlans: with parallel plans made free, the
// planner scans the messages with parallel workers; the backfill and the
// health check must still work (the metadata function opens a
// subtransaction, which a parallel worker cannot).
func TestBackfillUnderParallelPlans(t *testing.T) {
	e := testenv.Postgres().Env(t)
	var msgs []kandevtest.Message
	t0 := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	for i := range 3000 {
		meta := kandevtest.Metadata{Normalized: kandevtest.Normalized{Kind: "message"}}
		if i%100 == 7 {
			meta = kandevtest.Subagent(fmt.Sprint("tc-", i), "completed", &kandevtest.ClaudeCompleted)
		}
		m := meta.JSON()
		msgs = append(
			msgs,
			kandevtest.Message{ID: fmt.Sprint("m", i), TaskSessionID: "s", TaskID: "task-s", TurnID: "turn-1",
				Metadata: &m, CreatedAt: t0.Add(time.Duration(i) * time.Second)},
		)
	}
	if err := kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s", "task-s"); err != nil {
		t.Fatal(err)
	}
	if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, msgs); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.OpenDB(e.DSN + "&parallel_setup_cost=0&parallel_tuple_cost=0" +
		"&min_parallel_table_scan_size=0&max_parallel_workers_per_gather=2")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sqlDB, _ := db.DB(); sqlDB.Close() }()
	var plan []string
	db.Raw(`EXPLAIN SELECT count(*) FROM task_session_messages WHERE strpos(metadata, 'x') > 0`).Scan(&plan)
	if !strings.Contains(strings.Join(plan, "\n"), "Parallel") {
		t.Fatalf("the test does not get a parallel plan:\n%s", strings.Join(plan, "\n"))
	}
	s, err := postgres.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if r := migration.New(s, migration.WithLogger(testlog.Discard)).Run(context.Background()); r.Failed() ||
		r.Step(migration.StepBackfill).RowsInserted != 30 {
		t.Fatalf("pass under parallel plans:\n%s", r)
	}
	if h, err := s.Health(context.Background(), report.HealthQuery{}); err != nil || !h.Ran {
		t.Errorf("health under parallel plans: %+v %v", h, err)
	}
}
