package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// TableExists implements sqldialect.Catalog.
func (Dialect) TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error) {
	var n int64
	err := db.WithContext(ctx).Raw(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).
		Scan(&n).Error
	return n > 0, err
}

// Describe implements sqldialect.Catalog from sqlite_master and the table
// pragmas. Types are the declared type names, which is what ColumnType
// spells.
func (d Dialect) Describe(ctx context.Context, db *gorm.DB, name string) (sqldialect.TableInfo, error) {
	var info sqldialect.TableInfo
	db = db.WithContext(ctx)
	var cols []struct {
		Name, Type string
		NotNull    int
		Dflt       *string `gorm:"column:dflt_value"`
	}
	// A table has at least one column; a view of that name is not one.
	if err := db.Raw(`SELECT name, type, "notnull" AS not_null, dflt_value
		FROM pragma_table_info(?) WHERE EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)
		ORDER BY cid`, name, name).Scan(&cols).Error; err != nil || len(cols) == 0 {
		return info, err
	}
	info.Exists = true
	for _, c := range cols {
		col := sqldialect.ColumnInfo{Name: c.Name, Type: strings.ToUpper(c.Type), NotNull: c.NotNull == 1}
		if c.Dflt != nil {
			col.Default = *c.Dflt
		}
		info.Columns = append(info.Columns, col)
	}
	var idx []struct {
		Name, Origin, Columns string
		IsUnique, IsPartial   int
	}
	if err := db.Raw(`SELECT il.name AS name, il.origin AS origin, il."unique" AS is_unique, il.partial AS is_partial,
		(SELECT group_concat(name, ',' ORDER BY seqno) FROM pragma_index_info(il.name)) AS columns
		FROM pragma_index_list(?) il ORDER BY il.name`, name).Scan(&idx).Error; err != nil {
		return info, err
	}
	for _, x := range idx {
		info.Indexes = append(info.Indexes, sqldialect.IndexInfo{
			Name: x.Name, Primary: x.Origin == "pk", Unique: x.IsUnique == 1, Partial: x.IsPartial == 1,
			Columns: strings.Split(x.Columns, ","),
		})
	}
	var fks []struct{ Table, Column, RefColumn, OnDelete string }
	if err := db.Raw(`SELECT "table", "from" AS "column", "to" AS ref_column, on_delete
		FROM pragma_foreign_key_list(?)`, name).Scan(&fks).Error; err != nil {
		return info, err
	}
	for _, f := range fks {
		info.ForeignKeys = append(
			info.ForeignKeys,
			sqldialect.ForeignKeyInfo{Column: f.Column, RefTable: f.Table, RefColumn: f.RefColumn, OnDelete: f.OnDelete},
		)
	}
	return info, nil
}

// SchemaExtras implements sqldialect.Catalog: SQLite's helpers are Go
// functions registered on each connection (WithConn), not schema objects.
func (Dialect) SchemaExtras() []sqldialect.SchemaObject { return nil }

// Steps implements sqldialect.Catalog. SQLite can neither drop a UNIQUE
// constraint nor change a primary key, so both of its steps rebuild the
// table in its declared shape; the first rebuild brings everything, and
// the second then finds nothing to do. (Version 2, PostgreSQL's widening,
// has nothing to change here: INTEGER is 64-bit, timestamps are text.)
func (d Dialect) Steps() []sqldialect.Step {
	return []sqldialect.Step{
		{
			Version: 1,
			Name:    "agent_execution_id in the key",
			Stages:  rebuildStages,
			Apply: d.rebuildUnless(func(info sqldialect.TableInfo) bool {
				return info.Column("agent_execution_id") != nil && hasUnique(info, storekit.KeyColumns()) &&
					!hasUnique(info, legacyKey)
			}),
		},
		{
			Version: 3,
			Name:    "primary key (task_session_id, id)",
			Stages:  rebuildStages,
			Apply: d.rebuildUnless(func(info sqldialect.TableInfo) bool {
				return slices.ContainsFunc(
					info.Indexes,
					func(x sqldialect.IndexInfo) bool { return x.Primary && slices.Equal(x.Columns, primaryKey) },
				)
			}),
		},
	}
}

var (
	legacyKey     = []string{"task_session_id", "tool_call_id"}
	primaryKey    = []string{"task_session_id", "id"}
	rebuildStages = []string{"create new table", "copy rows", "drop old table", "rename"}
)

func hasUnique(info sqldialect.TableInfo, cols []string) bool {
	return slices.ContainsFunc(
		info.Indexes,
		func(x sqldialect.IndexInfo) bool { return x.Key() && !x.Primary && slices.Equal(x.Columns, cols) },
	)
}

// upgradeTable is the temporary name of the rebuilt table.
const upgradeTable = "task_session_subagents_upgrade"

// rebuildUnless is a step that rebuilds the table unless done says its
// catalog already has what the step brings: create the declared shape
// under a temporary name, copy every row (a column the old table lacks
// takes its default, or NULL), drop the old table, rename, and re-create
// its indexes but the first draft's unique one (the shape step then
// creates the declared ones). SQLite DDL is transactional: all of it
// commits or none.
func (d Dialect) rebuildUnless(
	done func(sqldialect.TableInfo) bool,
) func(context.Context, *gorm.DB, sqlstore.Tables, func(string) error) error {
	return func(ctx context.Context, tx *gorm.DB, t sqlstore.Tables, hook func(string) error) error {
		info, err := d.Describe(ctx, tx, sqlstore.Table)
		if err != nil || done(info) {
			return err
		}
		db := tx.WithContext(ctx)
		var cols []string
		for _, c := range info.Columns {
			if slices.ContainsFunc(storekit.Columns(), func(k storekit.Column) bool { return k.Name == c.Name }) {
				cols = append(cols, c.Name)
			}
		}
		var indexes []struct{ Name, SQL, Columns string }
		err = db.Raw(`SELECT m.name, m.sql,
				(SELECT group_concat(name, ',' ORDER BY seqno) FROM pragma_index_info(m.name)) AS columns
			FROM sqlite_master m WHERE m.type = 'index' AND m.tbl_name = ? AND m.sql IS NOT NULL`, sqlstore.Table).
			Scan(&indexes).Error
		if err != nil {
			return err
		}
		list := strings.Join(cols, ", ")
		steps := []struct{ stage, sql string }{
			{"", "DROP TABLE IF EXISTS " + upgradeTable},
			{"create new table", sqlstore.TableDDL(d, upgradeTable, t)},
			{"copy rows", "INSERT INTO " + upgradeTable + " (" + list + ") SELECT " + list + " FROM " + sqlstore.Table},
			{"drop old table", "DROP TABLE " + sqlstore.Table},
			{"rename", "ALTER TABLE " + upgradeTable + " RENAME TO " + sqlstore.Table},
		}
		for _, st := range steps {
			if err := db.Exec(st.sql).Error; err != nil {
				return fmt.Errorf("%s: %w", st.stage, err)
			}
			if st.stage != "" {
				if err := hook(st.stage); err != nil {
					return err
				}
			}
		}
		for _, x := range indexes {
			if x.Columns == strings.Join(legacyKey, ",") {
				continue
			}
			if err := db.Exec(x.SQL).Error; err != nil {
				return fmt.Errorf("re-create index %s: %w", x.Name, err)
			}
		}
		return nil
	}
}
