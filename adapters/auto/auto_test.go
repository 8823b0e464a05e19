package auto_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/auto"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
)

// TestEitherHandleOnEveryDialect: the store auto opens on a host's
// *gorm.DB and on its *sql.DB records and reads back on every dialect —
// the wrong adapter's SQL would fail on the other database.
func TestEitherHandleOnEveryDialect(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		ctx := context.Background()
		e.Session(t, "s")
		pool, err := e.DB.DB()
		if err != nil {
			t.Fatal(err)
		}
		fromGORM, err := auto.New(e.DB)
		if err != nil {
			t.Fatal(err)
		}
		fromSQL, err := auto.NewSQL(pool)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range []*sqlstore.Store{fromGORM, fromSQL} {
			if err := s.EnsureSchema(ctx); err != nil {
				t.Fatalf("store %d: %v", i, err)
			}
			row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "task-s", ExecutionID: "e",
				ToolCallID: "c" + string(rune('0'+i)), ToolStatus: "completed", ObservedAt: time.Now()})
			if err := s.Upsert(ctx, row); err != nil {
				t.Fatalf("store %d: %v", i, err)
			}
		}
		rows, err := fromSQL.ListBySession(ctx, "s", core.Page{})
		if err != nil || len(rows) != 2 {
			t.Fatalf("rows %+v, %v; want both stores' rows", rows, err)
		}
	})
}

// TestNeitherDialect: a handle on another database is refused, naming its
// driver.
func TestNeitherDialect(t *testing.T) {
	sql.Register("subagentctx-test-other", otherDriver{})
	db, err := sql.Open("subagentctx-test-other", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auto.NewSQL(db); err == nil || !strings.Contains(err.Error(), "otherDriver") {
		t.Errorf("a handle on another driver: %v; want it refused by name", err)
	}
	if _, err := auto.NewSQL(nil); err == nil {
		t.Error("a nil handle was accepted")
	}
	if _, err := auto.New(nil); err == nil {
		t.Error("a nil *gorm.DB was accepted")
	}
}

type otherDriver struct{}

func (otherDriver) Open(string) (driver.Conn, error) { return nil, errors.New("no database") }
