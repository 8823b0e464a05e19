package postgres_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/internal/pgtest"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
	"github.com/subagentctx/subagentctx/internal/testenv"
)

// TestMain runs the package with a non-UTC local zone; every connection also
// uses a non-UTC session time zone (pgtest.SessionTimeZone).
func TestMain(m *testing.M) {
	time.Local = time.FixedZone("UTC-07", -7*3600)
	os.Exit(m.Run())
}

var tables = core.HostTables{}

// open returns a fresh database with Kandev-shaped host tables and the
// store in it.
func open(t *testing.T) (*postgres.Store, *gorm.DB) {
	t.Helper()
	e := testenv.Postgres(t)
	return e.Store.(*postgres.Store), e.DB
}

func TestConformance(t *testing.T) {
	e := testenv.Postgres(t)
	var tz string
	e.DB.Raw(`SHOW TimeZone`).Scan(&tz)
	if tz != pgtest.SessionTimeZone {
		t.Fatalf("session time zone is %q, want %q", tz, pgtest.SessionTimeZone)
	}
	h := e.Harness()
	storetest.Run(t, func(*testing.T) storetest.Harness { return h })
}

// TestSchemaFromCatalog reads the table back from information_schema and
// pg_catalog and checks SPEC §2 property by property.
func TestSchemaFromCatalog(t *testing.T) {
	_, db := open(t)
	if _, err := postgres.New(context.Background(), db, tables); err != nil { // twice: a no-op
		t.Fatal(err)
	}
	type col struct {
		ColumnName    string
		DataType      string
		IsNullable    string
		ColumnDefault *string
	}
	var cols []col
	db.Raw(`SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'task_session_subagents'`).Scan(&cols)
	want := map[string]struct {
		typ      string
		nullable bool
		dflt     string
	}{
		"id": {"text", false, ""}, "task_session_id": {"text", false, ""}, "task_id": {"text", false, ""},
		"turn_id": {"text", true, ""}, "agent_execution_id": {"text", false, "'unknown'::text"}, "tool_call_id": {"text", false, ""},
		"parent_tool_call_id": {"text", true, ""}, "subagent_type": {"text", true, ""}, "description": {"text", true, ""},
		"agent_id": {"text", true, ""}, "child_session_id": {"text", true, ""}, "model": {"text", true, ""},
		"agent_status": {"text", true, ""}, "tool_status": {"text", true, ""}, "is_async": {"integer", false, "0"},
		"total_tokens": {"bigint", true, ""}, "tool_use_count": {"bigint", true, ""}, "duration_ms": {"bigint", true, ""},
		"source": {"text", false, "'live'::text"}, "observed_at": {"timestamp with time zone", false, ""},
		"settled_at": {"timestamp with time zone", true, ""}, "updated_at": {"timestamp with time zone", false, ""},
	}
	if len(cols) != len(want) {
		t.Errorf("table has %d columns, want %d", len(cols), len(want))
	}
	for _, c := range cols {
		w, ok := want[c.ColumnName]
		if !ok {
			t.Errorf("unexpected column %s", c.ColumnName)
			continue
		}
		dflt := ""
		if c.ColumnDefault != nil {
			dflt = *c.ColumnDefault
		}
		if c.DataType != w.typ || (c.IsNullable == "YES") != w.nullable || dflt != w.dflt {
			t.Errorf("column %s: %s nullable=%s default %q; want %s %v %q", c.ColumnName, c.DataType, c.IsNullable, dflt, w.typ, w.nullable, w.dflt)
		}
	}
	var pk, unique string
	db.Raw(`SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM pg_constraint c
		CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
		WHERE c.conrelid = 'task_session_subagents'::regclass AND c.contype = 'p'`).Scan(&pk)
	db.Raw(`SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM pg_constraint c
		CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
		WHERE c.conrelid = 'task_session_subagents'::regclass AND c.contype = 'u'`).Scan(&unique)
	if pk != "id" || unique != "task_session_id,agent_execution_id,tool_call_id" {
		t.Errorf("primary key %q, unique %q", pk, unique)
	}
	type fk struct {
		Ref, DelType string
		N            int
	}
	var fks []fk
	db.Raw(`SELECT confrelid::regclass::text AS ref, confdeltype::text AS del_type, count(*) OVER () AS n FROM pg_constraint
		WHERE conrelid = 'task_session_subagents'::regclass AND contype = 'f'`).Scan(&fks)
	if len(fks) != 1 || fks[0].Ref != "task_sessions" || fks[0].DelType != "c" {
		t.Errorf("foreign keys = %+v, want one to task_sessions ON DELETE CASCADE", fks)
	}
	for name, column := range map[string]string{"idx_subagents_session_id": "task_session_id", "idx_subagents_task_id": "task_id", "idx_subagents_turn_id": "turn_id"} {
		var def string
		db.Raw(`SELECT indexdef FROM pg_indexes WHERE tablename = 'task_session_subagents' AND indexname = ?`, name).Scan(&def)
		if !strings.HasSuffix(def, "("+column+")") {
			t.Errorf("index %s: %q", name, def)
		}
	}
	var metaCols []col
	db.Raw(`SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'kandev_meta' ORDER BY ordinal_position`).Scan(&metaCols)
	if len(metaCols) != 2 || metaCols[1].IsNullable != "NO" || metaCols[1].ColumnDefault == nil || *metaCols[1].ColumnDefault != "''::text" {
		t.Errorf("meta table = %+v", metaCols)
	}
}

func TestMissingSessionsTableNamed(t *testing.T) {
	db := pgtest.Open(t, pgtest.NewDatabase(t))
	_, err := postgres.New(context.Background(), db, core.HostTables{Sessions: "host_sessions"})
	if !errors.Is(err, sqlstore.ErrNoSessionsTable) || !strings.Contains(err.Error(), `"host_sessions"`) {
		t.Errorf("err = %v", err)
	}
}

func TestConstraintErrorDistinguishable(t *testing.T) {
	s, _ := open(t)
	row, _ := core.Normalize(core.Frame{TaskSessionID: "no-such-session", TaskID: "t", ToolCallID: "c", ObservedAt: time.Now()})
	err := s.Upsert(context.Background(), row)
	var op *core.OpError
	if !errors.Is(err, core.ErrConstraint) || errors.Is(err, core.ErrUnavailable) || !errors.As(err, &op) || op.Op != "upsert" ||
		!strings.Contains(err.Error(), "no-such-session") {
		t.Errorf("err = %v", err)
	}
}

func TestUnavailableErrorDistinguishable(t *testing.T) {
	pgtest.AdminDSN(t)
	// A loopback port nothing listens on.
	_, err := postgres.Open(context.Background(), "postgres://u:secret-pw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2", tables)
	if err == nil || !errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrConstraint) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	if err != nil && strings.Contains(err.Error(), "secret-pw") {
		t.Errorf("error leaks the password: %v", err)
	}
}

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
