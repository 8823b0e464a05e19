package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// TableExists implements sqldialect.Catalog: a table visible on the
// search_path.
func (Dialect) TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error) {
	var ok bool
	err := db.WithContext(ctx).Raw(`SELECT to_regclass(?) IS NOT NULL`, `"`+name+`"`).Scan(&ok).Error
	return ok, err
}

// typeNames spells pg_catalog's type names as ColumnType does.
var typeNames = map[string]string{"text": "TEXT", "bigint": "BIGINT", "integer": "INTEGER",
	"timestamp with time zone": "TIMESTAMPTZ", "timestamp without time zone": "TIMESTAMP"}

// onDelete spells pg_constraint.confdeltype.
var onDelete = map[string]string{"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}

// Describe implements sqldialect.Catalog from pg_catalog (a query on
// information_schema's views costs milliseconds, at every boot), in one
// statement: the pass describes the table in each of its steps, and every
// round trip is part of what a pass costs on an up-to-date table. A
// partitioned table is described by its parent, which carries the keys.
func (d Dialect) Describe(ctx context.Context, db *gorm.DB, name string) (sqldialect.TableInfo, error) {
	var info sqldialect.TableInfo
	var found struct {
		Exists, Partitioned           bool
		Columns, Indexes, ForeignKeys *string
	}
	rel := `"` + name + `"`
	if err := db.WithContext(ctx).Raw(describeTable, rel, rel, rel, rel, rel).Scan(&found).Error; err != nil {
		return info, err
	}
	if info.Exists, info.Partitioned = found.Exists, found.Partitioned; !found.Exists {
		return info, nil
	}
	var cols []struct {
		Name, Type string
		NotNull    bool    `json:"not_null"`
		Dflt       *string `json:"dflt"`
	}
	var idx []struct {
		Name, Columns, Constraint string
		Unique, Primary, Partial  bool
	}
	var fks []struct {
		Column    string `json:"column"`
		RefTable  string `json:"ref_table"`
		RefColumn string `json:"ref_column"`
		DelType   string `json:"del_type"`
	}
	for _, part := range []struct {
		text *string
		into any
	}{{found.Columns, &cols}, {found.Indexes, &idx}, {found.ForeignKeys, &fks}} {
		if part.text == nil { // json_agg over no rows
			continue
		}
		if err := json.Unmarshal([]byte(*part.text), part.into); err != nil {
			return info, fmt.Errorf("the catalog's description of %s: %w", name, err)
		}
	}
	for _, c := range cols {
		col := sqldialect.ColumnInfo{Name: c.Name, Type: c.Type, NotNull: c.NotNull}
		if t, ok := typeNames[c.Type]; ok {
			col.Type = t
		}
		if c.Dflt != nil {
			col.Default = strings.TrimSuffix(*c.Dflt, "::text")
		}
		info.Columns = append(info.Columns, col)
	}
	for _, i := range idx {
		info.Indexes = append(info.Indexes, sqldialect.IndexInfo{Name: i.Name, Unique: i.Unique, Primary: i.Primary,
			Partial: i.Partial, Columns: strings.Split(i.Columns, ","), Constraint: i.Constraint})
	}
	for _, f := range fks {
		info.ForeignKeys = append(info.ForeignKeys, sqldialect.ForeignKeyInfo{
			Column: f.Column, RefTable: f.RefTable, RefColumn: f.RefColumn, OnDelete: onDelete[f.DelType],
		})
	}
	return info, nil
}

// describeTable is a table's presence, columns (in order), indexes (by
// name, each with its columns in key order and the constraint it backs)
// and single-column foreign keys, the last three as JSON arrays. An index
// an interrupted CREATE INDEX CONCURRENTLY left invalid is no index: the
// pass builds it again.
const describeTable = `SELECT to_regclass(?) IS NOT NULL AS exists,
	COALESCE((SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(?)), false) AS partitioned,
	(SELECT json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, NULL),
			'not_null', a.attnotnull, 'dflt', pg_get_expr(x.adbin, x.adrelid)) ORDER BY a.attnum)
		FROM pg_attribute a LEFT JOIN pg_attrdef x ON x.adrelid = a.attrelid AND x.adnum = a.attnum
		WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
	(SELECT json_agg(json_build_object('name', c.relname, 'unique', i.indisunique, 'primary', i.indisprimary,
			'partial', i.indpred IS NOT NULL, 'columns', COALESCE(x.columns, ''),
			'constraint', COALESCE((SELECT k.conname FROM pg_constraint k
				WHERE k.conindid = i.indexrelid AND k.contype IN ('p', 'u')), '')) ORDER BY c.relname)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		CROSS JOIN LATERAL (SELECT string_agg(a.attname, ',' ORDER BY k.ord) AS columns
			FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) x
		WHERE i.indrelid = to_regclass(?) AND i.indisvalid) AS indexes,
	(SELECT json_agg(json_build_object('column', a.attname, 'ref_table', r.relname, 'ref_column', ra.attname,
			'del_type', k.confdeltype))
		FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
		JOIN pg_class r ON r.oid = k.confrelid
		JOIN pg_attribute ra ON ra.attrelid = k.confrelid AND ra.attnum = k.confkey[1]
		WHERE k.conrelid = to_regclass(?) AND k.contype = 'f' AND k.conparentid = 0) AS foreign_keys`

// OnlineIndex implements sqldialect.OnlineIndexer: CONCURRENTLY, after
// dropping what an interrupted build left (an invalid index of the same
// name, which IF NOT EXISTS would keep). PostgreSQL refuses CONCURRENTLY
// on a partitioned table: its indexes are built the plain way.
func (Dialect) OnlineIndex(info sqldialect.TableInfo, name, on string) []string {
	if info.Partitioned {
		return nil
	}
	return []string{"DROP INDEX CONCURRENTLY IF EXISTS " + name, "CREATE INDEX CONCURRENTLY " + name + " ON " + on}
}

// SchemaExtras implements sqldialect.Catalog: the message view's function.
func (Dialect) SchemaExtras() []sqldialect.SchemaObject {
	return []sqldialect.SchemaObject{{
		Create:  metadataFunction,
		Present: `SELECT to_regprocedure('subagentctx_metadata_v1(text)') IS NOT NULL`,
	}}
}

var (
	legacyKey  = []string{"task_session_id", "tool_call_id"}
	primaryKey = []string{"task_session_id", "id"}
)

// Steps implements sqldialect.Catalog: PostgreSQL changes the table in
// place, each step doing only what the catalog shows is missing. Its DDL
// is transactional: a failed step leaves the table as it was.
func (d Dialect) Steps() []sqldialect.Step {
	return []sqldialect.Step{
		{
			Version: 1,
			Name:    "agent_execution_id in the key",
			Stages:  []string{"add column", "drop legacy key", "add key"},
			Apply:   d.executionKey,
		},
		{
			Version: 2,
			Name:    "64-bit metrics and time zones",
			Stages:  []string{"widen metrics", "timestamps to timestamptz"},
			Apply:   d.widen,
		},
		{Version: 3, Name: "primary key (task_session_id, id)", Stages: []string{"primary key"}, Apply: d.primaryKey},
	}
}

// SetDefault implements sqldialect.DefaultSetter.
func (Dialect) SetDefault(table, column, literal string) string {
	return "ALTER TABLE " + table + " ALTER COLUMN " + column + " SET DEFAULT " + literal
}

// Define implements sqldialect.Definer: a plpgsql function, SECURITY
// DEFINER, its search_path pinned to the table's schema (pg_temp last) so
// that no role's objects stand in for the table's.
func (Dialect) Define(name string, statements []string) sqldialect.SchemaObject {
	at := func(q string) string { return strings.ReplaceAll(q, "?", "$1") }
	body := "DECLARE n bigint;\nBEGIN\n" + at(statements[0]) + ";\nGET DIAGNOSTICS n = ROW_COUNT;\n"
	for _, q := range statements[1:] {
		body += at(q) + ";\n"
	}
	body += "RETURN n;\nEND"
	return sqldialect.SchemaObject{
		Create: `DO $do$ BEGIN
CREATE OR REPLACE FUNCTION ` + name + `(at timestamptz) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER AS $f$
` + body + `
$f$;
EXECUTE format('ALTER FUNCTION ` + name + `(timestamptz) SET search_path = %I, pg_temp',
	(SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = '` + sqlstore.Table + `'::regclass));
END $do$`,
		Present: `SELECT to_regprocedure('` + name + `(timestamptz)') IS NOT NULL`,
		Cleanup: true,
	}
}

// Call implements sqldialect.Definer.
func (Dialect) Call(name string) string { return "SELECT " + name + "(?)" }

// run executes one statement of a step and reports its stage.
func run(db *gorm.DB, hook func(string) error, stage, q string) error {
	if err := db.Exec(q).Error; err != nil {
		return fmt.Errorf("%s: %w", stage, err)
	}
	return hook(stage)
}

// executionKey is step 1 (AC-33): the execution column with its DEFAULT
// (every row gets 'unknown'), the first draft's key dropped, the
// three-column key added.
func (d Dialect) executionKey(ctx context.Context, tx *gorm.DB, _ sqlstore.Tables, hook func(string) error) error {
	db := tx.WithContext(ctx)
	info, err := d.Describe(ctx, db, sqlstore.Table)
	if err != nil {
		return err
	}
	if info.Column("agent_execution_id") == nil {
		add := `ALTER TABLE ` + sqlstore.Table +
			` ADD COLUMN agent_execution_id TEXT NOT NULL DEFAULT '` + core.UnknownExecution + `'`
		if err := run(db, hook, "add column", add); err != nil {
			return err
		}
	}
	hasKey := false
	for _, x := range info.Indexes {
		switch {
		case x.Key() && slices.Equal(x.Columns, legacyKey) && x.Constraint != "":
			err = run(db, hook, "drop legacy key", `ALTER TABLE `+sqlstore.Table+` DROP CONSTRAINT "`+x.Constraint+`"`)
		case x.Key() && slices.Equal(x.Columns, legacyKey):
			err = run(db, hook, "drop legacy key", `DROP INDEX "`+x.Name+`"`)
		case x.Key() && slices.Equal(x.Columns, storekit.KeyColumns()):
			hasKey = true
		}
		if err != nil {
			return err
		}
	}
	if hasKey {
		return nil
	}
	return run(
		db,
		hook,
		"add key",
		`ALTER TABLE `+sqlstore.Table+` ADD CONSTRAINT `+sqlstore.Table+`_key UNIQUE (`+strings.Join(
			storekit.KeyColumns(),
			", ",
		)+`)`,
	)
}

// widen is step 2: metrics to BIGINT, timestamps to TIMESTAMPTZ (the old
// values are UTC wall time).
func (d Dialect) widen(ctx context.Context, tx *gorm.DB, _ sqlstore.Tables, hook func(string) error) error {
	db := tx.WithContext(ctx)
	info, err := d.Describe(ctx, db, sqlstore.Table)
	if err != nil {
		return err
	}
	for _, c := range storekit.Columns() {
		got := info.Column(c.Name)
		switch {
		case got == nil || got.Type == d.ColumnType(c.Type):
		case c.Type == storekit.Int64:
			err = run(db, hook, "widen metrics", `ALTER TABLE `+sqlstore.Table+` ALTER COLUMN `+c.Name+` TYPE BIGINT`)
		case c.Type == storekit.Time && got.Type == "TIMESTAMP":
			err = run(db, hook, "timestamps to timestamptz", `ALTER TABLE `+sqlstore.Table+` ALTER COLUMN `+c.Name+
				` TYPE TIMESTAMPTZ USING `+c.Name+` AT TIME ZONE 'UTC'`)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// primaryKey is step 3 (docs/CONTRACT.md §8.9): the primary key moves to
// (task_session_id, id).
func (d Dialect) primaryKey(ctx context.Context, tx *gorm.DB, _ sqlstore.Tables, hook func(string) error) error {
	db := tx.WithContext(ctx)
	info, err := d.Describe(ctx, db, sqlstore.Table)
	if err != nil {
		return err
	}
	alter := `ALTER TABLE ` + sqlstore.Table + ` `
	for _, x := range info.Indexes {
		if x.Primary && slices.Equal(x.Columns, primaryKey) {
			return nil
		}
		if x.Primary {
			alter += `DROP CONSTRAINT "` + x.Constraint + `", `
		}
	}
	return run(db, hook, "primary key", alter+`ADD PRIMARY KEY (`+strings.Join(primaryKey, ", ")+`)`)
}

// Refused implements sqldialect.PrivilegeChecker: 42501, insufficient
// privilege, which PostgreSQL also returns to a role that is not an
// object's owner.
func (Dialect) Refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// pairLock is the function a write takes its pairs' locks with
// (Absorbing.Lock): a role that writes rows needs EXECUTE on it, which
// PUBLIC holds unless a database revoked it.
const pairLock = "pg_advisory_xact_lock(integer, integer)"

// Lacking implements sqldialect.PrivilegeChecker for the session's role, in
// one statement: the grants' table privileges, then, for a part that
// inserts rows, EXECUTE on the function of the pairs' locks (named as its
// GRANT names it).
func (Dialect) Lacking(
	ctx context.Context, db *gorm.DB, grants []sqlstore.Grant,
) (privilege, table string, ok bool, err error) {
	var asked [][2]string // privilege, table
	var rows []string
	var args []any
	for _, g := range grants {
		for _, p := range g.Privileges {
			rows = append(rows, fmt.Sprintf("(%d, ?, ?)", len(asked)))
			args = append(args, p, `"`+g.Table+`"`)
			asked = append(asked, [2]string{p, g.Table})
		}
	}
	if len(asked) == 0 {
		return "", "", true, nil
	}
	var function string
	if slices.ContainsFunc(grants, func(g sqlstore.Grant) bool {
		return g.Table == sqlstore.Table && slices.Contains(g.Privileges, "INSERT")
	}) {
		function = fmt.Sprintf("\nUNION ALL SELECT %d WHERE NOT has_function_privilege(?, 'EXECUTE')", len(asked))
		args = append(args, "pg_catalog."+pairLock)
		asked = append(asked, [2]string{"EXECUTE", "FUNCTION " + pairLock})
	}
	var first []int
	err = db.WithContext(ctx).Raw(`SELECT g.n FROM (VALUES `+strings.Join(rows, ", ")+
		`) AS g(n, privilege, name) WHERE NOT has_table_privilege(g.name, g.privilege)`+function+
		` ORDER BY 1 LIMIT 1`, args...).Scan(&first).Error
	if err != nil || len(first) == 0 {
		return "", "", err == nil, err
	}
	lacked := asked[first[0]]
	return lacked[0], lacked[1], false, nil
}
