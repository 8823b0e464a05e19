package sqlstore_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
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
			health, healthArgs := s.HealthStatement(capture)
			list, listArgs := s.ListStatement("task_session_id", "sess-1", core.Page{})
			keyset, keysetArgs := s.ListStatement("turn_id", "turn-1", core.Page{Limit: 100, After: &core.Cursor{ObservedAt: capture, ToolCallID: "toolu_01", AgentExecutionID: "exec-1"}})
			where := " WHERE task_session_id = ?"
			rows, messages := s.FirstActivityStatements(where)
			files := map[string]string{
				"schema.sql":            strings.Join(sqlstore.SchemaStatements(s.Dialect(), s.Tables()), ";\n\n") + ";\n",
				"upsert.sql":            s.UpsertSQL() + ";\n",
				"list_by_session.sql":   withArgs(list, listArgs),
				"list_keyset.sql":       withArgs(keyset, keysetArgs),
				"subagent_messages.sql": s.Dialect().SubagentMessages(s.Tables()) + ";\n",
				"health.sql":            withArgs(health, healthArgs),
				"stats.sql": "-- the aggregates\n" + s.StatsStatement(where) + ";\n\n-- fan-out per turn\n" + s.FanOutStatement(where) +
					";\n\n-- first activity: rows\n" + rows + ";\n\n-- first activity: messages\n" + messages + ";\n",
				"upgrade.sql":  upgradeStatements(t, d),
				"sessions.sql": s.SessionsStatement(200) + ";\n",
			}
			files["backfill.sql"] = backfillText(s.Backfill(false))
			if d.Name == "postgres" {
				files["backfill_sharded.sql"] = backfillText(s.Backfill(true))
			}
			for name, text := range files {
				check(t, filepath.Join("testdata", d.Name, name), text)
			}
		})
	}
}

// backfillText is a backfill's statements in the order they run, in one
// transaction; the insert (or the single statement) takes updated_at.
func backfillText(bf sqlstore.BackfillStatements) string {
	var stmts []string
	stmts = append(stmts, bf.Plan...)
	if bf.Single != "" {
		stmts = append(stmts, bf.Single)
	} else {
		stmts = append(stmts, bf.Drop, bf.Stage, bf.Through, bf.Insert, bf.Drop)
	}
	stmts = slices.DeleteFunc(stmts, func(s string) bool { return s == "" })
	return "-- in one transaction; the argument is updated_at\n" + strings.Join(stmts, ";\n\n") + ";\n"
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
	var log statementLog
	s, err := d.New(e.DB.Session(&gorm.Session{Logger: &log}))
	if err != nil {
		t.Fatal(err)
	}
	log.on = true
	r := backfill.New(s, backfill.WithHook(func(stage string) error {
		if stage == "before commit" {
			log.on = false
		}
		return nil
	})).Prepare(context.Background())
	if r.Failed() {
		t.Fatalf("upgrade: %s", r)
	}
	schema := map[string]bool{}
	for _, q := range sqlstore.SchemaStatements(s.Dialect(), s.Tables()) {
		schema[q] = true // the table step's, not the upgrade's
	}
	var out []string
	for _, q := range log.statements {
		if schema[q] || strings.HasPrefix(q, "SELECT") || strings.HasPrefix(q, "SHOW") || strings.HasPrefix(q, "PRAGMA") || strings.Contains(q, "pragma_") || strings.Contains(q, "to_regclass") {
			continue // catalog reads
		}
		out = append(out, q)
	}
	return "-- the first draft's table upgraded in one transaction (statements between catalog reads)\n" + strings.Join(out, ";\n\n") + ";\n"
}

// statementLog is a GORM logger that keeps the statements it sees while on.
type statementLog struct {
	mu         sync.Mutex
	on         bool
	statements []string
}

func (l *statementLog) LogMode(logger.LogLevel) logger.Interface { return l }
func (l *statementLog) Info(context.Context, string, ...any)     {}
func (l *statementLog) Warn(context.Context, string, ...any)     {}
func (l *statementLog) Error(context.Context, string, ...any)    {}
func (l *statementLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		q, _ := fc()
		l.statements = append(l.statements, q)
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
		t.Errorf("%s is stale: the code now renders\n%s\n(run go test ./adapters/sqlstore -run TestGoldenStatements -update, and review the diff)", path, got)
	}
}
