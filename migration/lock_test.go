package migration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/migration"
)

// TestPassLockOnEveryHandle: whatever handle a host gives the store — a
// pool of one connection (the reference host's test pools), GORM's
// PrepareStmt handle, or on PostgreSQL a connection whose search_path
// names another schema first (a role with a schema of its own) — its pass
// waits while another process holds the pass's lock, then completes on
// that handle, and the handle then records. Before, the first deadlocked
// on its own lock, the second took no lock at all, the third another key.
func TestPassLockOnEveryHandle(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		handles := map[string]func() *gorm.DB{
			"OneConnectionPool": func() *gorm.DB {
				db := testenv.Reopen(t, e)
				pool, err := db.DB()
				if err != nil {
					t.Fatal(err)
				}
				pool.SetMaxOpenConns(1)
				return db
			},
			"PrepareStmt": func() *gorm.DB { return testenv.Reopen(t, e).Session(&gorm.Session{PrepareStmt: true}) },
		}
		if e.Name != "sqlite" && !strings.HasPrefix(e.Name, "citus") {
			if err := e.DB.Exec(`CREATE SCHEMA elsewhere`).Error; err != nil {
				t.Fatal(err)
			}
			handles["SearchPathElsewhereFirst"] = func() *gorm.DB {
				return testenv.Reopen(t, &sqltest.Env{DSN: e.DSN + "&search_path=elsewhere,public"})
			}
		}
		for name, open := range handles {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				held, err := e.Store.Pass(ctx) // another process's pass, on a pool of its own
				if err != nil {
					t.Fatal(err)
				}
				release := held.Close
				s, err := e.New(open())
				if err != nil {
					release()
					t.Fatal(err)
				}
				done := make(chan migration.Report, 1)
				go func() { done <- migration.New(s, migration.WithLogger(testlog.Discard)).Run(ctx) }()
				if r, err := await.Within(done, 300*time.Millisecond); err == nil {
					release()
					t.Fatalf("the pass ran while another held the lock:\n%s", r)
				}
				release()
				if r := await.Recv(t, done, "the pass once the lock was free"); r.Failed() {
					t.Fatalf("pass failed:\n%s", r)
				}
				e.Session(t, "s-"+name)
				testenv.Record(t, s, []core.Frame{{TaskSessionID: "s-" + name, TaskID: "t", ToolCallID: "c",
					ObservedAt: time.Now()}})
				if rows, err := s.ListBySession(ctx, "s-"+name, core.Page{}); err != nil || len(rows) != 1 {
					t.Errorf("after the pass, the handle recorded %d rows (%v), want 1", len(rows), err)
				}
			})
		}
	})
}
