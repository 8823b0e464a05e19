package sqltest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/core/storetest"
)

var schemaTests = []test{
	{"AC17_CatalogMatchesTheDeclaration", testCatalog},
	{"AC18_EnsureSchemaTwiceIsANoOp", testEnsureSchemaTwice},
	{"NoSessionsTableNamed", testNoSessionsTable},
}

// literal is a declared default as the catalog spells it ("" for none).
func literal(c storekit.Column) string {
	switch v := c.Default.(type) {
	case string:
		return "'" + v + "'"
	case bool:
		if v {
			return "1"
		}
		return "0"
	}
	return ""
}

// testCatalog reads the table back from the catalog and checks it against
// storekit.Columns, column by column (docs/CONTRACT.md §2): type, NOT NULL,
// default (and none on the metrics), the primary key, the three-column key,
// the cascading foreign key, the indexes and the meta table.
func testCatalog(t *testing.T, d *Driver) {
	e := d.Env(t)
	c := e.describe(t, sqlstore.Table)
	if len(c.Columns) != len(storekit.Columns) {
		t.Errorf("table has %d columns, the declaration %d", len(c.Columns), len(storekit.Columns))
	}
	for _, col := range storekit.Columns {
		want := sqlstore.ColumnInfo{
			Name:    col.Name,
			Type:    d.Dialect.ColumnType(col.Type),
			NotNull: !col.Nullable,
			Default: literal(col),
		}
		if g := c.Column(col.Name); g == nil || *g != want {
			t.Errorf("column %s: catalog %+v, declaration %+v", col.Name, g, want)
		}
	}
	var primary, unique []string
	plain := map[string]string{}
	for _, x := range c.Indexes {
		switch {
		case x.Primary:
			primary = x.Columns
		case x.Key(): // a partial unique index (SQLite's history) constrains only its rows
			unique = append(unique, strings.Join(x.Columns, ","))
		default:
			plain[x.Name] = strings.Join(x.Columns, ",")
		}
	}
	if want := []string{"task_session_id", "id"}; !slices.Equal(primary, want) {
		t.Errorf("primary key %v, want %v", primary, want)
	}
	if want := []string{strings.Join(storekit.KeyColumns, ",")}; !slices.Equal(unique, want) {
		t.Errorf("unique keys %v, want exactly %v", unique, want)
	}
	if want := []sqlstore.ForeignKeyInfo{
		{Column: "task_session_id", RefTable: sqlstore.DefaultSessionsTable, RefColumn: "id", OnDelete: "CASCADE"},
	}; !reflect.DeepEqual(
		c.ForeignKeys,
		want,
	) {
		t.Errorf("foreign keys %+v, want only %+v (turn_id and agent_execution_id have none)", c.ForeignKeys, want)
	}
	for name, col := range map[string]string{
		"idx_subagents_session_id": "task_session_id", "idx_subagents_task_id": "task_id", "idx_subagents_turn_id": "turn_id",
	} {
		if plain[name] != col {
			t.Errorf("index %s on (%s), want (%s)", name, plain[name], col)
		}
	}
	if m := e.describe(t, sqlstore.DefaultMetaTable).Columns; len(m) != 2 || m[0].Name != "key" ||
		m[0].Type != "TEXT" || m[1] != (sqlstore.ColumnInfo{Name: "value", Type: "TEXT", NotNull: true, Default: "''"}) {
		t.Errorf("meta table %+v, want (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '')", m)
	}
	if diff, err := e.Store.ShapeDiff(context.Background()); err != nil || diff != "" {
		t.Errorf("a fresh table differs from its declaration: %q, %v", diff, err)
	}
}

func testEnsureSchemaTwice(t *testing.T, d *Driver) {
	e := d.Env(t)
	before := snapshot(t, e)
	if err := e.Store.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, e); before != after {
		t.Errorf("a second EnsureSchema changed the table:\n%s\n%s", before, after)
	}
}

// testNoSessionsTable: without the host's sessions table nothing is
// created, and the error is matchable and names the table.
func testNoSessionsTable(t *testing.T, d *Driver) {
	db, _ := d.Open(t)
	s, err := d.New(db, sqlstore.WithTables(sqlstore.Tables{Sessions: "host_sessions"}))
	if err != nil {
		t.Fatal(err)
	}
	err = s.EnsureSchema(context.Background())
	storetest.WantError(t, "no sessions table", err, sqlstore.ErrNoSessionsTable)
	if !errors.Is(err, sqlstore.ErrNoSessionsTable) || !strings.Contains(err.Error(), `"host_sessions"`) {
		t.Errorf("err = %v, want ErrNoSessionsTable naming host_sessions", err)
	}
	if ok, _ := d.Dialect.TableExists(context.Background(), db, sqlstore.Table); ok {
		t.Error("the table was created without the host's sessions table")
	}
	for _, bad := range []string{"public.sessions", "sessions; DROP TABLE x", "task_session_subagents"} {
		_, err := d.New(db, sqlstore.WithTables(sqlstore.Tables{Messages: bad}))
		if !errors.Is(err, sqlstore.ErrInvalidTableName) || !strings.Contains(err.Error(), "messages table") {
			t.Errorf("table name %q: err %v, want ErrInvalidTableName naming the messages table", bad, err)
		}
	}
}
