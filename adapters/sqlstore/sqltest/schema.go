package sqltest

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
)

var schemaTests = []test{
	{"AC17_CatalogMatchesTheDeclaration", testCatalog},
	{"AC18_EnsureSchemaTwiceIsANoOp", testEnsureSchemaTwice},
	{"NoSessionsTableNamed", testNoSessionsTable},
	{"UpsertStatementFromTheRules", testUpsertStatement},
}

// testCatalog reads the table back from the catalog and checks it against
// core.Columns, column by column (docs/CONTRACT.md §2): type, NOT NULL,
// default (and none on the metrics), the primary key, the three-column key,
// the cascading foreign key, the indexes and the meta table.
func testCatalog(t *testing.T, d *Driver) {
	e := d.Env(t)
	c := d.Catalog(t, e.DB)
	dialect := e.Store.Dialect()
	got := map[string]CatalogColumn{}
	for _, col := range c.Columns {
		got[col.Name] = col
	}
	if len(c.Columns) != len(core.Columns) {
		t.Errorf("table has %d columns, the declaration %d", len(c.Columns), len(core.Columns))
	}
	for _, col := range core.Columns {
		g, ok := got[col.Name]
		want := CatalogColumn{Name: col.Name, Type: dialect.ColumnType(col.Type), NotNull: !col.Nullable, Default: sqlstore.DefaultLiteral(col)}
		if !ok || g != want {
			t.Errorf("column %s: catalog %+v, declaration %+v", col.Name, g, want)
		}
	}
	if want := strings.Join(sqlstore.PrimaryKeyColumns, ","); c.PrimaryKey != want {
		t.Errorf("primary key (%s), want (%s)", c.PrimaryKey, want)
	}
	if want := []string{strings.Join(core.KeyColumns, ",")}; !reflect.DeepEqual(c.UniqueKeys, want) {
		t.Errorf("unique keys %v, want exactly %v", c.UniqueKeys, want)
	}
	if want := []ForeignKey{{Table: sqlstore.DefaultSessionsTable, Column: "task_session_id", RefColumn: "id", OnDelete: "CASCADE"}}; !reflect.DeepEqual(c.ForeignKeys, want) {
		t.Errorf("foreign keys %+v, want only %+v (turn_id and agent_execution_id have none)", c.ForeignKeys, want)
	}
	for _, x := range sqlstore.Indexes {
		if c.Indexes[x.Name] != x.Column {
			t.Errorf("index %s on (%s), want (%s)", x.Name, c.Indexes[x.Name], x.Column)
		}
	}
	if len(c.Meta) != 2 || c.Meta[0].Name != "key" || c.Meta[0].Type != "TEXT" ||
		c.Meta[1] != (CatalogColumn{Name: "value", Type: "TEXT", NotNull: true, Default: "''"}) {
		t.Errorf("meta table %+v, want (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '')", c.Meta)
	}
}

func testEnsureSchemaTwice(t *testing.T, d *Driver) {
	e := d.Env(t)
	before := d.Catalog(t, e.DB)
	if err := e.Store.EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := d.Catalog(t, e.DB); !reflect.DeepEqual(before, after) {
		t.Errorf("a second EnsureSchema changed the table:\n%+v\n%+v", before, after)
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
	if !errors.Is(err, sqlstore.ErrNoSessionsTable) || !strings.Contains(err.Error(), `"host_sessions"`) {
		t.Errorf("err = %v, want ErrNoSessionsTable naming host_sessions", err)
	}
	if ok, _ := s.Dialect().TableExists(context.Background(), db, sqlstore.Table); ok {
		t.Error("the table was created without the host's sessions table")
	}
	for _, bad := range []string{"public.sessions", "sessions; DROP TABLE x", "", "task_session_subagents"} {
		if bad == "" {
			continue
		}
		_, err := d.New(db, sqlstore.WithTables(sqlstore.Tables{Messages: bad}))
		if !errors.Is(err, sqlstore.ErrInvalidTableName) || !strings.Contains(err.Error(), "messages table") {
			t.Errorf("table name %q: err %v, want ErrInvalidTableName naming the messages table", bad, err)
		}
	}
}

// testUpsertStatement pins the shape of the one statement: INSERT … ON
// CONFLICT on the three-column key, every stored-row reference qualified,
// exactly the non-key, non-write-once columns in the SET list, in
// declaration order, and one placeholder per declared column.
func testUpsertStatement(t *testing.T, d *Driver) {
	e := d.Env(t)
	q := strings.NewReplacer(`"`, "", "`", "").Replace(e.Store.UpsertSQL())
	if !strings.HasPrefix(q, "INSERT INTO task_session_subagents ("+strings.Join(columnNames(), ",")+")") ||
		!strings.Contains(q, "ON CONFLICT ("+strings.Join(core.KeyColumns, ",")+") DO UPDATE SET") {
		t.Fatalf("statement: %s", q)
	}
	set := q[strings.Index(q, "DO UPDATE SET")+len("DO UPDATE SET"):]
	var assigned []string
	for _, m := range regexp.MustCompile(`(?:^|,)\s*(\w+)=`).FindAllStringSubmatch(set, -1) {
		assigned = append(assigned, m[1])
	}
	var want []string
	for _, c := range core.Columns {
		if c.Rule != core.RuleKey && c.Rule != core.RuleWriteOnce {
			want = append(want, c.Name)
		}
	}
	if !slices.Equal(assigned, want) {
		t.Errorf("SET list assigns %v, want %v", assigned, want)
	}
	if !strings.Contains(set, "COALESCE(task_session_subagents.turn_id, excluded.turn_id)") {
		t.Errorf("stored-row references must be qualified: %s", set)
	}
	if n := strings.Count(q, "?") + len(regexp.MustCompile(`\$\d+`).FindAllString(q, -1)); n != len(core.Columns) {
		t.Errorf("%d placeholders, want one per column (%d)", n, len(core.Columns))
	}
}

func columnNames() []string {
	names := make([]string, len(core.Columns))
	for i, c := range core.Columns {
		names[i] = c.Name
	}
	return names
}
