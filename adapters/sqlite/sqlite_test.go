package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// TestMain runs the package with a non-UTC local zone: nothing may depend on
// the process's TZ (SPEC §2).
func TestMain(m *testing.M) {
	time.Local = time.FixedZone("UTC-07", -7*3600)
	os.Exit(m.Run())
}

var tables = core.HostTables{}

// open returns a fresh database with Kandev-shaped host tables and the
// store in it.
func open(t testing.TB) (*sqlite.Store, *gorm.DB) {
	t.Helper()
	e := testenv.SQLite(t)
	return e.Store.(*sqlite.Store), e.DB
}

func TestConformance(t *testing.T) {
	h := testenv.SQLite(t).Harness() // one file database, WAL, shared by the suite's tests
	storetest.Run(t, func(*testing.T) storetest.Harness { return h })
}

// TestSchemaFromCatalog reads the table back from sqlite_master and pragmas
// and checks SPEC §2 property by property.
func TestSchemaFromCatalog(t *testing.T) {
	s, db := open(t)
	ctx := context.Background()
	// Creating twice is a no-op.
	if _, err := sqlite.New(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	_ = s
	type col struct {
		Name    string
		Type    string
		NotNull int
		Dflt    *string `gorm:"column:dflt_value"`
		PK      int
	}
	var cols []col
	if err := db.Raw(`SELECT name, type, "notnull" AS not_null, dflt_value, pk FROM pragma_table_info('task_session_subagents')`).Scan(&cols).Error; err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		typ     string
		notNull bool
		dflt    string // "" = no default
	}{
		"id": {"TEXT", false, ""}, "task_session_id": {"TEXT", true, ""}, "task_id": {"TEXT", true, ""},
		"turn_id": {"TEXT", false, ""}, "agent_execution_id": {"TEXT", true, "'unknown'"}, "tool_call_id": {"TEXT", true, ""},
		"parent_tool_call_id": {"TEXT", false, ""}, "subagent_type": {"TEXT", false, ""}, "description": {"TEXT", false, ""},
		"agent_id": {"TEXT", false, ""}, "child_session_id": {"TEXT", false, ""}, "model": {"TEXT", false, ""},
		"agent_status": {"TEXT", false, ""}, "tool_status": {"TEXT", false, ""}, "is_async": {"INTEGER", true, "0"},
		"total_tokens": {"INTEGER", false, ""}, "tool_use_count": {"INTEGER", false, ""}, "duration_ms": {"INTEGER", false, ""},
		"source": {"TEXT", true, "'live'"}, "observed_at": {"TIMESTAMP", true, ""}, "settled_at": {"TIMESTAMP", false, ""},
		"updated_at": {"TIMESTAMP", true, ""},
	}
	if len(cols) != len(want) {
		t.Errorf("table has %d columns, want %d", len(cols), len(want))
	}
	for _, c := range cols {
		w, ok := want[c.Name]
		if !ok {
			t.Errorf("unexpected column %s", c.Name)
			continue
		}
		dflt := ""
		if c.Dflt != nil {
			dflt = *c.Dflt
		}
		if c.Type != w.typ || (c.NotNull == 1) != w.notNull || dflt != w.dflt {
			t.Errorf("column %s: type %s not null %d default %q; want %s %v %q", c.Name, c.Type, c.NotNull, dflt, w.typ, w.notNull, w.dflt)
		}
		if (c.PK == 1) != (c.Name == "id") {
			t.Errorf("column %s: pk %d", c.Name, c.PK)
		}
	}
	// Unique key, in order, and the three indexes.
	type idx struct {
		Name   string
		Unique int
		Origin string
	}
	var idxs []idx
	db.Raw(`SELECT name, "unique", origin FROM pragma_index_list('task_session_subagents')`).Scan(&idxs)
	var uniqueCols string
	gotIdx := map[string]string{}
	for _, i := range idxs {
		var names []string
		db.Raw(`SELECT name FROM pragma_index_info(?) ORDER BY seqno`, i.Name).Scan(&names)
		if i.Unique == 1 && i.Origin == "u" {
			uniqueCols = strings.Join(names, ",")
		}
		gotIdx[i.Name] = strings.Join(names, ",")
	}
	if uniqueCols != "task_session_id,agent_execution_id,tool_call_id" {
		t.Errorf("unique key = %q", uniqueCols)
	}
	for name, cols := range map[string]string{"idx_subagents_session_id": "task_session_id", "idx_subagents_task_id": "task_id", "idx_subagents_turn_id": "turn_id"} {
		if gotIdx[name] != cols {
			t.Errorf("index %s on %q, want %q", name, gotIdx[name], cols)
		}
	}
	// The only foreign key: session, cascading.
	type fk struct {
		Table, From, To, OnDelete string
	}
	var fks []fk
	db.Raw(`SELECT "table", "from", "to", on_delete FROM pragma_foreign_key_list('task_session_subagents')`).Scan(&fks)
	if len(fks) != 1 || fks[0] != (fk{"task_sessions", "task_session_id", "id", "CASCADE"}) {
		t.Errorf("foreign keys = %+v", fks)
	}
	var fkOn int
	db.Raw(`PRAGMA foreign_keys`).Scan(&fkOn)
	var mode string
	db.Raw(`PRAGMA journal_mode`).Scan(&mode)
	if fkOn != 1 || mode != "wal" {
		t.Errorf("pragmas: foreign_keys=%d journal_mode=%s", fkOn, mode)
	}
	var meta []col
	db.Raw(`SELECT name, type, "notnull" AS not_null, dflt_value, pk FROM pragma_table_info('kandev_meta')`).Scan(&meta)
	if len(meta) != 2 || meta[0].Name != "key" || meta[0].PK != 1 || meta[1].Name != "value" || meta[1].NotNull != 1 || *meta[1].Dflt != "''" {
		t.Errorf("meta table = %+v", meta)
	}
}

func TestMissingSessionsTableNamed(t *testing.T) {
	db, err := sqlite.OpenDB(filepath.Join(t.TempDir(), "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.New(context.Background(), db, core.HostTables{Sessions: "host_sessions"})
	if !errors.Is(err, sqlstore.ErrNoSessionsTable) || !strings.Contains(err.Error(), `"host_sessions"`) {
		t.Errorf("err = %v", err)
	}
}

func TestInvalidTableNameBeforeAnySQL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "never.db")
	_, err := sqlite.Open(context.Background(), path, core.HostTables{Messages: "messages; DROP TABLE x"})
	if err == nil || !strings.Contains(err.Error(), "messages table") {
		t.Fatalf("err = %v", err)
	}
	if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
		t.Errorf("the database file was created before the name was validated")
	}
}

func TestConstraintErrorDistinguishable(t *testing.T) {
	s, _ := open(t)
	row, _ := core.Normalize(core.Frame{TaskSessionID: "no-such-session", TaskID: "t", ToolCallID: "c", ObservedAt: time.Now()})
	err := s.Upsert(context.Background(), row)
	var op *core.OpError
	if !errors.Is(err, core.ErrConstraint) || errors.Is(err, core.ErrUnavailable) || !errors.As(err, &op) || op.Op != "upsert" ||
		!strings.Contains(err.Error(), "no-such-session") || !strings.Contains(err.Error(), `tool_call_id="c"`) {
		t.Errorf("err = %v", err)
	}
}

func TestUnavailableErrorDistinguishable(t *testing.T) {
	s, db := open(t)
	sqlDB, _ := db.DB()
	sqlDB.Close()
	row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c", ObservedAt: time.Now()})
	err := s.Upsert(context.Background(), row)
	if err == nil || errors.Is(err, core.ErrConstraint) {
		t.Errorf("closed database: err = %v", err)
	}
}

// TestInstantOrdersAnyTextForm checks the SQLite timestamp expression on the
// text forms a host's created_at may hold (AC-24e).
func TestInstantOrdersAnyTextForm(t *testing.T) {
	_, db := open(t)
	ref := time.Date(2026, 3, 4, 5, 6, 7, 999999000, time.UTC)
	cases := map[string]time.Time{
		"2026-03-04 05:06:07.999999+00:00":  ref,
		"2026-03-04T05:06:07.999999Z":       ref,
		"2026-03-04 07:06:07.999999+02:00":  ref,
		"2026-03-04 05:06:07.9999996+00:00": ref, // beyond microseconds: truncated, never carried into the next second
		"2026-03-04 05:06:07.5+00:00":       time.Date(2026, 3, 4, 5, 6, 7, 500000000, time.UTC),
		"2026-03-04 05:06:07+00:00":         time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		"2026-03-04 05:06:07":               time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		"1901-12-13 20:45:52.000001+00:00":  time.Date(1901, 12, 13, 20, 45, 52, 1000, time.UTC),
		"9999-12-31 23:59:59.999999+00:00":  time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		"2026-03-03 22:06:07.999999-07:00":  ref,
		"2026-03-04 05:06:07.000001+00:00":  time.Date(2026, 3, 4, 5, 6, 7, 1000, time.UTC),
	}
	d := sqlite.Dialect{}
	for text, want := range cases {
		var got int64
		if err := db.Raw(`SELECT `+d.Instant("?"), text, text, text, text, text, text, text, text, text).Scan(&got).Error; err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got != want.UnixMicro() {
			t.Errorf("%s: instant %d, want %d (%s)", text, got, want.UnixMicro(), want.Format(time.RFC3339Nano))
		}
	}
}

// TestConcurrentWritersOneFile: 16 goroutines each record 2,000 frames over
// shared and distinct keys into one SQLite file; zero failed writes and the
// exact expected rows (issue 3, point 6).
func TestConcurrentWritersOneFile(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	s, db := open(t)
	ctx := context.Background()
	if err := kandevtest.InsertSession(ctx, db, tables, "sess", "task"); err != nil {
		t.Fatal(err)
	}
	rec, err := core.NewRecorder(s)
	if err != nil {
		t.Fatal(err)
	}
	const writers, frames = 16, 2000
	tool := func(w, i int) string {
		if i%4 == 0 {
			return fmt.Sprintf("shared-%d", i%10) // keys every writer hits
		}
		return fmt.Sprintf("own-%d-%d", w, i%100) // keys of one writer
	}
	want := map[string]bool{}
	for w := range writers {
		for i := range frames {
			want[tool(w, i)] = true
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range frames {
				tool := tool(w, i)
				rec.Record(ctx, core.Frame{TaskSessionID: "sess", TaskID: "task", ExecutionID: "exec", ToolCallID: tool,
					ToolStatus: "in_progress", Payload: &core.Payload{TotalTokens: int64(i + 1)}})
			}
		})
	}
	wg.Wait()
	v := rec.Counters().Values()
	if v.Failed != 0 || v.Persisted != writers*frames {
		t.Fatalf("counters %+v: want %d persisted, 0 failed", v, writers*frames)
	}
	rows, err := s.ListBySession(ctx, "sess", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Errorf("rows = %d, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		if !want[r.ToolCallID] || r.TotalTokens == nil || *r.TotalTokens < 1 || *r.TotalTokens > frames {
			t.Errorf("unexpected row %s tokens %v", r.ToolCallID, r.TotalTokens)
		}
	}
}

// TestStoreOnAHostTransaction: a host may hand the store a *gorm.DB that is
// a transaction; the upsert then runs through GORM, inside it.
func TestStoreOnAHostTransaction(t *testing.T) {
	_, db := open(t)
	ctx := context.Background()
	kandevtest.InsertSession(ctx, db, tables, "s", "t")
	tx := db.Begin()
	s, err := sqlite.Attach(tx, tables)
	if err != nil {
		t.Fatal(err)
	}
	row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c", ObservedAt: time.Now(),
		Payload: &core.Payload{Model: "m"}})
	if err := s.Upsert(ctx, row); err != nil {
		t.Fatal(err)
	}
	if err := s.Upsert(ctx, row); err != nil {
		t.Fatal(err)
	}
	if rows, err := s.ListBySession(ctx, "s", core.Page{}); err != nil || len(rows) != 1 || *rows[0].Model != "m" {
		t.Fatalf("inside the transaction: %v %v", rows, err)
	}
	tx.Rollback()
	outside, _ := sqlite.Attach(db, tables)
	if rows, err := outside.ListBySession(ctx, "s", core.Page{}); err != nil || len(rows) != 0 {
		t.Errorf("after the host's rollback: %d rows, %v", len(rows), err)
	}
}
