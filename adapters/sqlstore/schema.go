package sqlstore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// The table's constraints and indexes, by name, on every dialect.
const (
	keyConstraint     = Table + "_key"
	sessionForeignKey = Table + "_session_fk"
)

// primaryKeyColumns is the primary key: the session first, so that the
// key contains the column a distributed database shards by
// (docs/CONTRACT.md §2, §8.9).
var primaryKeyColumns = []string{"task_session_id", "id"}

// legacyKeyColumns is the first draft's unique key, which the three-column
// key replaced (AC-33).
var legacyKeyColumns = []string{"task_session_id", "tool_call_id"}

// secondaryIndexes are the secondary indexes, by name and column. The
// first three are the reference schema's; observed_at serves a window: the
// health check's rows in it and the retention's rows before it
// (docs/CONTRACT.md §2). observed_at is written once per row (a history
// merge may set it once more), so its index costs an insert, never an
// update: PostgreSQL's updates stay HOT.
var secondaryIndexes = []struct{ Name, Column string }{
	{"idx_subagents_session_id", "task_session_id"},
	{"idx_subagents_task_id", "task_id"},
	{turnIndex, "turn_id"},
	{observedAtIndex, "observed_at"},
}

// turnIndex finds a turn's rows.
const turnIndex = "idx_subagents_turn_id"

// observedAtIndex serves windows of observation time.
const observedAtIndex = "idx_subagents_observed_at"

// seamColumn is the table's one column that is not a Subagent field: 1 on
// every row this build writes, 0 (its default) on a row inserted by a
// writer that names no such column — an earlier release's, which may
// double a pair at the seam (docs/CONTRACT.md §3.2) — until a pass has
// checked that row's pair and merged it if doubled (repairSeam). Only the
// rows still to check are indexed (seamIndex), so a pass finds none in one
// probe of an empty index.
var seamColumn = storekit.Column{Name: "seam_checked", Type: storekit.Bool, Default: false}

// seamIndex holds the rows whose pair no pass has checked yet.
const seamIndex = "idx_subagents_unchecked"

// unchecked is the condition, on alias's row, that seamIndex holds it.
func unchecked(alias string) string { return alias + seamColumn.Name + " = 0" }

// tableColumns are the table's columns in table order: the declared ones,
// then seamColumn.
var tableColumns = append(slices.Clone(columns), seamColumn)

// historyIndex holds the rows the backfill wrote and no live row has
// absorbed yet (docs/CONTRACT.md §8.5): a sharded table's trigger looks
// there for an inserted row's history, the repair for doubled pairs. It
// stays as small as the history. SQLite declares it in a form of its own,
// unique over every row keyed 'unknown', the target of its upsert's
// absorbing ON CONFLICT clause (the sqlite package's Upsert).
const historyIndex = "idx_subagents_history"

// TableDDL is the table's CREATE TABLE, rendered from storekit.Columns: every
// column with its dialect type, NOT NULL and default, the primary key, the
// three-column key and the cascading foreign key to the host's sessions.
// name is the table to create (Table, or a temporary name for a dialect's
// rebuild step).
func TableDDL(d sqldialect.Fragments, name string, t Tables) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", name)
	for _, c := range tableColumns {
		fmt.Fprintf(&b, "\t%-20s %s,\n", c.Name, columnDDL(d, c))
	}
	fmt.Fprintf(&b, "\tPRIMARY KEY (%s),\n", strings.Join(primaryKeyColumns, ", "))
	fmt.Fprintf(&b, "\tCONSTRAINT %s UNIQUE (%s),\n", keyConstraint, strings.Join(storekit.KeyColumns(), ", "))
	fmt.Fprintf(
		&b, "\tCONSTRAINT %s FOREIGN KEY (task_session_id) REFERENCES %s(id) ON DELETE CASCADE\n)", sessionForeignKey,
		quote(t.Sessions),
	)
	return b.String()
}

// columnDDL is a column's type, NOT NULL and default, as declared.
func columnDDL(d sqldialect.Fragments, c storekit.Column) string {
	s := d.ColumnType(c.Type)
	if !c.Nullable {
		s += " NOT NULL"
	}
	if lit := defaultLiteral(c); lit != "" {
		s += " DEFAULT " + lit
	}
	return s
}

// sessionOrderIndex keeps each session's rows in AC-13 order: a page of a
// session's turns walks it from its cursor and stops (docs/CONTRACT.md
// §5.7). observed_at is written once per row, so it costs an insert,
// never an update.
const sessionOrderIndex = "idx_subagents_session_order"

// IndexDDL creates the secondary indexes if absent, the history's and the
// sessions' order (in the dialect's form).
func IndexDDL(d sqldialect.Fragments) []string {
	defs := indexDefs(d)
	out := make([]string, len(defs))
	for i, x := range defs {
		out[i] = x.create()
	}
	return out
}

// indexDef is a secondary index: its name, and what follows ON.
type indexDef struct{ name, on string }

// create is the index's plain, idempotent CREATE INDEX.
func (x indexDef) create() string { return "CREATE INDEX IF NOT EXISTS " + x.name + " ON " + x.on }

// indexDefs are the secondary indexes, the history's and the sessions'
// order (in the dialect's form).
func indexDefs(d sqldialect.Fragments) []indexDef {
	out := make([]indexDef, len(secondaryIndexes))
	for i, x := range secondaryIndexes {
		out[i] = indexDef{x.Name, Table + "(" + x.Column + ")"}
	}
	return append(
		out,
		indexDef{historyIndex, Table + "(task_session_id, tool_call_id) WHERE " + backfilled("")},
		indexDef{seamIndex, Table + "(task_session_id, tool_call_id) WHERE " + unchecked("")},
		indexDef{sessionOrderIndex, Table + "(task_session_id, " + d.Ordered("observed_at") + ", " +
			d.Bytewise("tool_call_id") + ", " + d.Bytewise("agent_execution_id") + ")"},
	)
}

// buildIndexes are the statements that build the named indexes on a
// table described by info, which holds rows: without blocking its writes
// where the dialect can (OnlineIndexer) and they run outside any
// transaction (outside), else as IndexDDL does.
func (s *Store) buildIndexes(info sqldialect.TableInfo, names []string, outside bool) []string {
	var out []string
	online, _ := s.d.(sqldialect.OnlineIndexer)
	if !outside {
		online = nil
	}
	for _, x := range indexDefs(s.d) {
		if !slices.Contains(names, x.name) {
			continue
		}
		if online != nil {
			if q := online.OnlineIndex(info, x.name, x.on); q != nil {
				out = append(out, q...)
				continue
			}
		}
		out = append(out, x.create())
	}
	return out
}

// metaDDL creates the meta table if absent (docs/CONTRACT.md §2).
func metaDDL(meta string) string {
	return `CREATE TABLE IF NOT EXISTS ` + quote(meta) + ` (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '')`
}

// schemaStatements is the whole DDL of the store, every statement
// idempotent: the table, its indexes, the meta table, the dialect's extras
// and what its upsert needs where the table is (sharded: Placement); meta
// is the meta table's name (MetaTable).
func (s *Store) schemaStatements(sharded bool, meta string) []string {
	out := append([]string{TableDDL(s.d, Table, s.tables)}, IndexDDL(s.d)...)
	out = append(out, metaDDL(meta))
	for _, o := range append(s.d.SchemaExtras(), s.upsertObjects(sharded)...) {
		out = append(out, o.Create)
	}
	return out
}

// upsertObjects are what the upsert needs on a table placed so.
func (s *Store) upsertObjects(sharded bool) []sqldialect.SchemaObject {
	if sharded {
		return s.form.Sharded
	}
	return s.form.Schema
}

// defaultLiteral renders a column's declared default as an SQL literal,
// "" when it has none.
func defaultLiteral(c storekit.Column) string {
	switch x := c.Default.(type) {
	case nil:
		return ""
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	panic(fmt.Sprintf("sqlstore: no SQL literal for the default %#v of %s", c.Default, c.Name))
}

// addColumnDDL adds a declared column that a deployed table lacks: only a
// nullable or defaulted one can be added to a table with rows.
func addColumnDDL(d sqldialect.Fragments, c storekit.Column) string {
	return "ALTER TABLE " + Table + " ADD COLUMN " + c.Name + " " + columnDDL(d, c)
}

// additive reports whether a column can be added to a table with rows.
func additive(c storekit.Column) bool { return c.Nullable || c.Default != nil }

// shapeReport is how a table differs from its declaration.
type shapeReport struct {
	// missing are declared columns the table lacks that the pass can add.
	missing []storekit.Column
	// indexes are declared secondary indexes the table lacks, by name.
	indexes []string
	// diffs are the other differences, each a sentence: what only a
	// numbered step can change.
	diffs []string
}

// holds reports whether the table has its declared shape.
func (r shapeReport) holds() bool {
	return len(r.missing) == 0 && len(r.indexes) == 0 && len(r.diffs) == 0
}

func (r shapeReport) String() string {
	var parts []string
	for _, c := range r.missing {
		parts = append(parts, "lacks column "+c.Name)
	}
	for _, x := range r.indexes {
		parts = append(parts, "lacks index "+x)
	}
	return strings.Join(append(parts, r.diffs...), "; ")
}

// compare tells how a table, as its catalog describes it, differs from the
// declaration (docs/CONTRACT.md §2): every column of storekit.Columns with its
// type, nullability and default; the primary key, the three-column key and
// no other unique key on the first draft's columns; the foreign key to the
// sessions with its cascade; the secondary indexes. A column the table has
// beyond the declaration is tolerated unless no insert could fill it (NOT
// NULL without a default).
func compare(d sqldialect.Fragments, t Tables, info sqldialect.TableInfo) shapeReport {
	var r shapeReport
	if !info.Exists {
		r.diffs = append(r.diffs, "the table does not exist")
		return r
	}
	declared := map[string]bool{}
	for _, c := range tableColumns {
		declared[c.Name] = true
		got := info.Column(c.Name)
		switch {
		case got == nil && additive(c):
			r.missing = append(r.missing, c)
		case got == nil:
			r.diffs = append(
				r.diffs,
				fmt.Sprintf("lacks column %s, NOT NULL without a default (only a numbered step can add it)", c.Name),
			)
		case got.Type != d.ColumnType(c.Type):
			r.diffs = append(
				r.diffs,
				fmt.Sprintf("column %s is %s, declared %s", c.Name, got.Type, d.ColumnType(c.Type)),
			)
		case got.NotNull == c.Nullable:
			r.diffs = append(
				r.diffs,
				fmt.Sprintf("column %s is %s, declared %s", c.Name, nullability(!got.NotNull), nullability(c.Nullable)),
			)
		case got.Default != defaultLiteral(c):
			r.diffs = append(
				r.diffs,
				fmt.Sprintf(
					"column %s defaults to %s, declared %s", c.Name, orNone(got.Default), orNone(defaultLiteral(c)),
				),
			)
		}
	}
	for _, c := range info.Columns {
		if !declared[c.Name] && c.NotNull && c.Default == "" {
			r.diffs = append(
				r.diffs,
				fmt.Sprintf(
					"column %s is not declared and is NOT NULL without a default: no insert could fill it",
					c.Name,
				),
			)
		}
	}
	var key, primary, legacy bool
	plain := map[string]bool{}
	for _, x := range info.Indexes {
		switch {
		case x.Primary:
			primary = slices.Equal(x.Columns, primaryKeyColumns)
			if !primary {
				r.diffs = append(
					r.diffs,
					fmt.Sprintf(
						"the primary key is (%s), declared (%s)", strings.Join(x.Columns, ", "), strings.Join(primaryKeyColumns, ", "),
					),
				)
			}
		case x.Key() && slices.Equal(x.Columns, storekit.KeyColumns()):
			key = true
		case x.Key() && slices.Equal(x.Columns, legacyKeyColumns):
			legacy = true
		case !x.Unique && len(x.Columns) == 1:
			plain[x.Columns[0]] = true
		}
	}
	if !key {
		r.diffs = append(r.diffs, "lacks the unique key ("+strings.Join(storekit.KeyColumns(), ", ")+")")
	}
	if legacy {
		r.diffs = append(r.diffs, "still has the first draft's unique key ("+strings.Join(legacyKeyColumns, ", ")+")")
	}
	if !primary && !slices.ContainsFunc(info.Indexes, func(x sqldialect.IndexInfo) bool { return x.Primary }) {
		r.diffs = append(r.diffs, "has no primary key")
	}
	for _, x := range secondaryIndexes {
		if !plain[x.Column] {
			r.indexes = append(r.indexes, x.Name)
		}
	}
	for _, name := range []string{historyIndex, seamIndex, sessionOrderIndex} {
		if !slices.ContainsFunc(info.Indexes, func(x sqldialect.IndexInfo) bool { return x.Name == name }) {
			r.indexes = append(r.indexes, name)
		}
	}
	if !slices.ContainsFunc(info.ForeignKeys, func(f sqldialect.ForeignKeyInfo) bool {
		return f.Column == "task_session_id" && f.RefTable == t.Sessions && f.RefColumn == "id" &&
			f.OnDelete == "CASCADE"
	}) {
		r.diffs = append(r.diffs, "lacks the foreign key task_session_id → "+t.Sessions+"(id) ON DELETE CASCADE")
	}
	return r
}

func nullability(nullable bool) string {
	if nullable {
		return "nullable"
	}
	return "NOT NULL"
}

func orNone(lit string) string {
	if lit == "" {
		return "no default"
	}
	return lit
}

// inferVersion places a table that an earlier build left without a
// recorded version (docs/CONTRACT.md §4 step 2): the first draft's key or
// no execution column is version 0; then the declared column types
// (PostgreSQL's 64-bit metrics and time-zone-aware timestamps), version 2;
// the primary key (task_session_id, id), version 3 — the shape of every
// build before the seam repair (step 4).
func inferVersion(d sqldialect.Fragments, info sqldialect.TableInfo) int {
	hasKey := slices.ContainsFunc(
		info.Indexes,
		func(x sqldialect.IndexInfo) bool { return x.Key() && slices.Equal(x.Columns, storekit.KeyColumns()) },
	)
	legacy := slices.ContainsFunc(
		info.Indexes,
		func(x sqldialect.IndexInfo) bool { return x.Key() && slices.Equal(x.Columns, legacyKeyColumns) },
	)
	if info.Column("agent_execution_id") == nil || !hasKey || legacy {
		return 0
	}
	for _, c := range columns {
		if got := info.Column(c.Name); got != nil && (c.Type == storekit.Int64 || c.Type == storekit.Time) &&
			got.Type != d.ColumnType(c.Type) {
			return 1
		}
	}
	if !slices.ContainsFunc(
		info.Indexes,
		func(x sqldialect.IndexInfo) bool { return x.Primary && slices.Equal(x.Columns, primaryKeyColumns) },
	) {
		return 2
	}
	return 3
}
