// Package sqlite is the embedded default: task_session_subagents in a SQLite
// database through GORM and gorm.io/driver/sqlite (mattn/go-sqlite3, cgo).
package sqlite

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mattn/go-sqlite3"
	gormsqlite "gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
)

// Store is a core.Store (and core.Reader) on SQLite.
type Store = sqlstore.Store

// Pragmas are set in the DSN so that every pooled connection has them: WAL,
// a busy timeout instead of immediate "database is locked", foreign keys on
// (SQLite's default is off, which would silently disable AC-16's cascade),
// and BEGIN IMMEDIATE for transactions so a writer never has to upgrade a
// read lock.
const Pragmas = "_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL"

// DSN returns the go-sqlite3 DSN for a database file with Pragmas.
func DSN(path string) string {
	if strings.HasPrefix(path, "file:") {
		if strings.Contains(path, "?") {
			return path + "&" + Pragmas
		}
		return path + "?" + Pragmas
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + Pragmas
}

// OpenDB opens a SQLite file with Pragmas as a *gorm.DB (GORM's own logger
// silenced: failures surface as errors, not log lines).
func OpenDB(path string) (*gorm.DB, error) {
	if path == "" {
		return nil, errors.New("subagentctx: sqlite: database path is empty")
	}
	db, err := gorm.Open(gormsqlite.Open(DSN(path)), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return nil, fmt.Errorf("subagentctx: sqlite: open %s: %w", path, err)
	}
	return db, nil
}

// Open opens (creating if needed) the SQLite file at path and the store in
// it. The host's sessions table must exist. Close releases the connections.
func Open(ctx context.Context, path string, tables core.HostTables) (*Store, error) {
	if err := tables.Validate(); err != nil { // before any connection or file
		return nil, fmt.Errorf("subagentctx: sqlite: %w", err)
	}
	db, err := OpenDB(path)
	if err != nil {
		return nil, err
	}
	return sqlstore.OpenOwned(ctx, db, Dialect{}, tables)
}

// New opens the store on a *gorm.DB the host already has; Close leaves that
// handle open. The handle should have foreign keys on (see Pragmas) or the
// session cascade (AC-16) will not happen.
func New(ctx context.Context, db *gorm.DB, tables core.HostTables) (*Store, error) {
	return sqlstore.Open(ctx, db, Dialect{}, tables)
}

// Attach returns the store on db without touching the database: no table is
// created and the sessions table is not checked. For read-only use (the
// operator's command line) and for hosts that run the migration pass
// (backfill.Migrator) themselves, whose first step creates the table.
func Attach(db *gorm.DB, tables core.HostTables) (*Store, error) {
	return sqlstore.New(db, Dialect{}, tables)
}

// Dialect is SQLite's sqlstore.Dialect.
type Dialect struct{}

// Name implements sqlstore.Dialect.
func (Dialect) Name() string { return "sqlite" }

// createTable is SPEC §2's table. SQLite's INTEGER is 64-bit; TIMESTAMP
// columns hold go-sqlite3's UTC text form, compared through Instant.
const createTable = `CREATE TABLE IF NOT EXISTS task_session_subagents (
	id                  TEXT PRIMARY KEY,
	task_session_id     TEXT NOT NULL,
	task_id             TEXT NOT NULL,
	turn_id             TEXT,
	agent_execution_id  TEXT NOT NULL DEFAULT 'unknown',
	tool_call_id        TEXT NOT NULL,
	parent_tool_call_id TEXT,
	subagent_type       TEXT,
	description         TEXT,
	agent_id            TEXT,
	child_session_id    TEXT,
	model               TEXT,
	agent_status        TEXT,
	tool_status         TEXT,
	is_async            INTEGER NOT NULL DEFAULT 0,
	total_tokens        INTEGER,
	tool_use_count      INTEGER,
	duration_ms         INTEGER,
	source              TEXT NOT NULL DEFAULT 'live',
	observed_at         TIMESTAMP NOT NULL,
	settled_at          TIMESTAMP,
	updated_at          TIMESTAMP NOT NULL,
	UNIQUE (task_session_id, agent_execution_id, tool_call_id),
	FOREIGN KEY (task_session_id) REFERENCES %s(id) ON DELETE CASCADE
)`

// CreateStatements implements sqlstore.Dialect.
func (Dialect) CreateStatements(t core.HostTables) []string {
	return []string{
		fmt.Sprintf(createTable, core.QuoteIdentifier(t.Sessions)),
	}
}

// TableExists implements sqlstore.Dialect.
func (Dialect) TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error) {
	schema, table := "main", name
	if i := strings.IndexByte(name, '.'); i >= 0 {
		schema, table = name[:i], name[i+1:]
	}
	var n int64
	err := db.WithContext(ctx).Raw(`SELECT count(*) FROM `+core.QuoteIdentifier(schema)+`.sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n).Error
	return n > 0, err
}

// Instant is the timestamp's Unix time in microseconds, computed from any
// text form SQLite's date functions accept ("YYYY-MM-DD HH:MM:SS[.f…][±HH:MM|Z]",
// with a space or T): go-sqlite3's own form and other writers' alike. The
// whole seconds go through unixepoch() with the fraction removed (SQLite's
// date functions round fractions to milliseconds, which could carry into the
// next second); the fraction's first six digits are added exactly. No string
// comparison and no julianday (AC-24e).
func (Dialect) Instant(x string) string {
	frac := "substr(" + x + ", 21)"
	digits := "substr(" + frac + ", 1, length(" + frac + ") - length(ltrim(" + frac + ", '0123456789')))"
	whole := "substr(" + x + ", 1, 19) || CASE WHEN substr(" + x + ", 20, 1) = '.' THEN ltrim(" + frac + ", '0123456789') ELSE substr(" + x + ", 20) END"
	return "(unixepoch(" + whole + ") * 1000000 + CASE WHEN substr(" + x + ", 20, 1) = '.' THEN CAST(substr(" + digits + " || '000000', 1, 6) AS INTEGER) ELSE 0 END)"
}

// HostTime implements sqlstore.Dialect: SQLite copies the host's text
// verbatim; Instant reads any of its forms.
func (Dialect) HostTime(context.Context, *gorm.DB, string, string) (func(string) string, error) {
	return func(x string) string { return x }, nil
}

// Classify implements sqlstore.Dialect.
func (Dialect) Classify(err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code {
	case sqlite3.ErrConstraint:
		return core.ErrConstraint
	case sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrCantOpen, sqlite3.ErrIoErr, sqlite3.ErrFull, sqlite3.ErrReadonly:
		return core.ErrUnavailable
	}
	return nil
}

// MessageDocument implements sqlstore.Dialect. json_valid() guards every
// json_extract(), which would otherwise raise on malformed text. A document
// holding the escape \u0000 is treated as malformed, as PostgreSQL must
// (its jsonb cannot hold NUL), so both dialects read the same rows.
func (Dialect) MessageDocument(col string) string {
	return "CASE WHEN instr(" + col + ", 'subagent_task') > 0 AND instr(" + col + ", '\\u0000') = 0 AND json_valid(" + col +
		") AND json_type(" + col + ") = 'object' THEN " + col + " ELSE '{}' END"
}

func jsonPath(path []string) string { return "'$." + sqlstore.JSONPath(path...) + "'" }

// JSONText implements sqlstore.Dialect.
func (Dialect) JSONText(doc string, path ...string) string {
	p := jsonPath(path)
	return "CASE WHEN json_type(" + doc + ", " + p + ") = 'text' THEN NULLIF(json_extract(" + doc + ", " + p + "), '') END"
}

// JSONInt implements sqlstore.Dialect: a JSON number with an integral
// value in range (1e3 and 2.0 count; 1.5 and 2^63 do not), as on
// PostgreSQL. json_type() says 'integer' for an integer literal beyond 64
// bits too, which json_extract() then returns as a REAL: both must agree. A
// real literal counts below 9e18, where a double still holds every integer
// exactly enough to compare.
func (Dialect) JSONInt(doc string, min int64, path ...string) string {
	p := jsonPath(path)
	v := "json_extract(" + doc + ", " + p + ")"
	return fmt.Sprintf("CASE json_type(%s, %s) WHEN 'integer' THEN CASE WHEN typeof(%s) = 'integer' AND %s >= %d THEN %s END"+
		" WHEN 'real' THEN CASE WHEN %s = CAST(%s AS INTEGER) AND %s >= %d AND %s < 9.0e18 THEN CAST(%s AS INTEGER) END END",
		doc, p, v, v, min, v, v, v, v, min, v, v)
}

// JSONBool implements sqlstore.Dialect: true, or a number equal to 1.
func (Dialect) JSONBool(doc string, path ...string) string {
	p := jsonPath(path)
	t := "json_type(" + doc + ", " + p + ")"
	return "CASE WHEN " + t + " = 'true' OR (" + t + " IN ('integer', 'real') AND json_extract(" + doc + ", " + p + ") = 1) THEN 1 ELSE 0 END"
}

// Shape implements sqlstore.Dialect from sqlite_master and the pragmas.
func (Dialect) Shape(ctx context.Context, db *gorm.DB) (sqlstore.Shape, error) {
	var shape sqlstore.Shape
	ok, err := Dialect{}.TableExists(ctx, db, core.Table)
	if err != nil || !ok {
		return shape, err
	}
	shape.Exists, shape.Wide = true, true // INTEGER is 64-bit; timestamps are text
	var n int64
	if err := db.WithContext(ctx).Raw(`SELECT count(*) FROM pragma_table_info('task_session_subagents') WHERE name = 'agent_execution_id'`).Scan(&n).Error; err != nil {
		return shape, err
	}
	shape.HasExecutionColumn = n > 0
	var idx []sqlstore.CatalogIndex
	err = db.WithContext(ctx).Raw(`SELECT il.name AS name, il."unique" AS "unique",
		(SELECT group_concat(name, ',' ORDER BY seqno) FROM pragma_index_info(il.name)) AS columns
		FROM pragma_index_list('task_session_subagents') il`).Scan(&idx).Error
	return sqlstore.ShapeFrom(shape, idx), err
}

// Upgrade implements sqlstore.Dialect. SQLite cannot drop a UNIQUE
// constraint, so the table is rebuilt: create the end shape under a temporary
// name, copy every row (the new column takes its DEFAULT 'unknown'), drop the
// old table, rename, and re-create its indexes (except the legacy unique
// one) and the three required ones. SQLite DDL is transactional: all of it
// commits or none.
func (d Dialect) Upgrade(ctx context.Context, tx *gorm.DB, t core.HostTables, hook func(string) error) error {
	db := tx.WithContext(ctx)
	var cols []string
	if err := db.Raw(`SELECT name FROM pragma_table_info('task_session_subagents') ORDER BY cid`).Scan(&cols).Error; err != nil {
		return err
	}
	var indexSQL []string
	if err := db.Raw(`SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'task_session_subagents' AND sql IS NOT NULL`).Scan(&indexSQL).Error; err != nil {
		return err
	}
	const tmp = "task_session_subagents_upgrade"
	create := strings.Replace(fmt.Sprintf(createTable, core.QuoteIdentifier(t.Sessions)), "task_session_subagents", tmp, 1)
	list := strings.Join(cols, ", ")
	steps := []struct{ stage, sql string }{
		{"create new table", "DROP TABLE IF EXISTS " + tmp},
		{"create new table", create},
		{"copy rows", "INSERT INTO " + tmp + " (" + list + ") SELECT " + list + " FROM task_session_subagents"},
		{"drop old table", "DROP TABLE task_session_subagents"},
		{"rename", "ALTER TABLE " + tmp + " RENAME TO task_session_subagents"},
	}
	for _, st := range steps {
		if err := db.Exec(st.sql).Error; err != nil {
			return fmt.Errorf("%s: %w", st.stage, err)
		}
		if err := hook(st.stage); err != nil {
			return err
		}
	}
	for _, q := range indexSQL {
		if isLegacyUniqueIndex(q) {
			continue
		}
		if err := db.Exec(q).Error; err != nil {
			return fmt.Errorf("re-create index: %w", err)
		}
	}
	for _, q := range sqlstore.IndexStatements {
		if err := db.Exec(q).Error; err != nil {
			return fmt.Errorf("create index: %w", err)
		}
	}
	return hook("before commit")
}

// isLegacyUniqueIndex recognises CREATE UNIQUE INDEX … (task_session_id,
// tool_call_id), the legacy key when it was declared as an index.
func isLegacyUniqueIndex(sql string) bool {
	norm := strings.Join(strings.Fields(strings.ToLower(sql)), "")
	return strings.HasPrefix(norm, "createuniqueindex") && strings.HasSuffix(norm, "(task_session_id,tool_call_id)")
}

// Fence implements sqlstore.Dialect: SQLite never flattens a subquery that
// has an OFFSET.
func (Dialect) Fence() string { return "LIMIT -1 OFFSET 0" }

// WritableCTE implements sqlstore.Dialect.
func (Dialect) WritableCTE() bool { return false }
