package sqltest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

var schemaTests = []test{
	{"AC17_CatalogMatchesTheDeclaration", testCatalog},
	{"AC18_EnsureSchemaTwiceIsANoOp", testEnsureSchemaTwice},
	{"NoSessionsTableNamed", testNoSessionsTable},
	{"MetaTableFoundOrCreated", testMetaTable},
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
// the cascading foreign key and the indexes (the meta table's:
// testMetaTable).
func testCatalog(t *testing.T, d *Driver) {
	e := d.Env(t)
	c := e.describe(t, sqlstore.Table)
	// The declared columns, then the one the storage keeps for the seam's
	// check (docs/CONTRACT.md §2): 1 on every row this build writes.
	if len(c.Columns) != len(storekit.Columns())+1 {
		t.Errorf("table has %d columns, the declaration %d and seam_checked", len(c.Columns), len(storekit.Columns()))
	}
	seam := sqldialect.ColumnInfo{Name: "seam_checked", Type: d.Dialect.ColumnType(storekit.Bool), NotNull: true,
		Default: "0"}
	if g := c.Column(seam.Name); g == nil || *g != seam {
		t.Errorf("column seam_checked: catalog %+v, want %+v", g, seam)
	}
	for _, col := range storekit.Columns() {
		want := sqldialect.ColumnInfo{
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
	if want := []string{strings.Join(storekit.KeyColumns(), ",")}; !slices.Equal(unique, want) {
		t.Errorf("unique keys %v, want exactly %v", unique, want)
	}
	if want := []sqldialect.ForeignKeyInfo{
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
	if diff := e.shapeDiff(t); diff != "" {
		t.Errorf("a fresh table differs from its declaration: %q", diff)
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

// testMetaTable: a host that names no meta table gets this library's,
// subagentctx_meta, unless the database already has the reference host's
// kandev_meta (an earlier release's keys), which is then found and used,
// never duplicated; subagentctx_meta wins where both exist; a name the
// host gives is created and used (docs/CONTRACT.md §2, Decision 8.2).
func testMetaTable(t *testing.T, d *Driver) {
	ctx := context.Background()
	exists := func(db *gorm.DB, name string) bool {
		t.Helper()
		ok, err := d.Dialect.TableExists(ctx, db, name)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	const old = "2026-01-01T00:00:00Z" // an earlier release's capture_since
	for _, c := range []struct {
		name          string
		tables        sqlstore.Tables
		have          []string // meta tables in the database before the pass
		want, without string   // the table in use, and one that must not exist
	}{
		{"Fresh", sqlstore.Tables{}, nil, sqlstore.DefaultMetaTable, sqlstore.KandevMetaTable},
		{"EarlierRelease", sqlstore.Tables{}, []string{sqlstore.KandevMetaTable}, sqlstore.KandevMetaTable,
			sqlstore.DefaultMetaTable},
		{"Both", sqlstore.Tables{}, []string{sqlstore.KandevMetaTable, sqlstore.DefaultMetaTable},
			sqlstore.DefaultMetaTable, ""},
		{"Named", sqlstore.Tables{Meta: "host_meta"}, []string{sqlstore.KandevMetaTable}, "host_meta",
			sqlstore.DefaultMetaTable},
		{"KandevPreset", sqlstore.KandevTables(), nil, sqlstore.KandevMetaTable, sqlstore.DefaultMetaTable},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, _ := d.Open(t)
			if err := kandevtest.CreateTables(ctx, db, sqlstore.Tables{}); err != nil {
				t.Fatal(err)
			}
			if d.Host != nil {
				d.Host(t, db)
			}
			if err := db.Exec(`DROP TABLE ` + sqlstore.KandevMetaTable).Error; err != nil {
				t.Fatal(err)
			}
			for _, name := range c.have {
				if err := db.Exec(`CREATE TABLE ` + name + ` (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '')`).
					Error; err != nil {
					t.Fatal(err)
				}
				if err := db.Exec(`INSERT INTO `+name+` ("key", value) VALUES (?, ?)`, storekit.CaptureSinceKey,
					old).Error; err != nil {
					t.Fatal(err)
				}
			}
			s, err := d.New(db, sqlstore.WithTables(c.tables))
			if err != nil {
				t.Fatal(err)
			}
			if r := migration.New(s, migration.WithLogger(testlog.Discard)).Run(ctx); r.Failed() {
				t.Fatalf("pass: %s", r)
			}
			if got, err := s.MetaTable(ctx); err != nil || got != c.want {
				t.Errorf("MetaTable = %q, %v; want %q", got, err, c.want)
			}
			if c.without != "" && exists(db, c.without) {
				t.Errorf("the pass created %s beside %s", c.without, c.want)
			}
			if m := (&Env{Driver: d, DB: db}).describe(t, c.want).Columns; len(m) != 2 || m[0].Name != "key" ||
				m[1] != (sqldialect.ColumnInfo{Name: "value", Type: "TEXT", NotNull: true, Default: "''"}) {
				t.Errorf("meta table %s %+v, want (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '')", c.want, m)
			}
			// The keys are read from, and written to, the table in use.
			var v []string
			if err := db.Raw(`SELECT value FROM `+c.want+` WHERE "key" = ?`, storekit.CaptureSinceKey).
				Scan(&v).Error; err != nil {
				t.Fatal(err)
			}
			a, err := s.Activation(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(v) != 1 || !a.CaptureSince.Usable() || a.CaptureSince.Raw != v[0] {
				t.Errorf("capture_since in %s %v, activation %+v: want the same key", c.want, v, a.CaptureSince)
			}
			if slices.Contains(c.have, c.want) && v[0] != old {
				t.Errorf("capture_since in %s rewritten: %q, want %q", c.want, v[0], old)
			}
		})
	}
}
