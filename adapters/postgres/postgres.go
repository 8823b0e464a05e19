// Package postgres keeps task_session_subagents in PostgreSQL through GORM
// and gorm.io/driver/postgres (pgx).
package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
)

// Store is a core.Store (and core.Reader) on PostgreSQL.
type Store = sqlstore.Store

// OpenDB returns a *gorm.DB for dsn without connecting yet (the first query
// connects; a server that is down is an error of that query, not of
// OpenDB). GORM's own logger is silenced: failures surface as errors.
func OpenDB(dsn string) (*gorm.DB, error) {
	if dsn == "" {
		return nil, errors.New("subagentctx: postgres: DSN is empty")
	}
	db, err := gorm.Open(gormpostgres.Open(dsn), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, DisableAutomaticPing: true})
	if err != nil {
		return nil, &core.OpError{Op: "connect to " + Redact(dsn), Kind: Dialect{}.Classify(err), Err: redactErr(err, dsn)}
	}
	return db, nil
}

// Open connects with dsn and opens the store. The host's sessions table
// must exist. Close releases the connections.
func Open(ctx context.Context, dsn string, tables core.HostTables) (*Store, error) {
	if err := tables.Validate(); err != nil { // before any connection or file
		return nil, fmt.Errorf("subagentctx: postgres: %w", err)
	}
	db, err := OpenDB(dsn)
	if err != nil {
		return nil, err
	}
	return sqlstore.OpenOwned(ctx, db, Dialect{}, tables)
}

// New opens the store on a *gorm.DB the host already has; Close leaves that
// handle open.
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

// Dialect is PostgreSQL's sqlstore.Dialect.
type Dialect struct{}

// Name implements sqlstore.Dialect.
func (Dialect) Name() string { return "postgres" }

// createTable is SPEC §2's table. Metrics are BIGINT (the upstream 32-bit
// INTEGER was a defect). Timestamps are TIMESTAMPTZ: absolute instants, so
// neither writing nor comparing depends on the session's TimeZone.
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
	total_tokens        BIGINT,
	tool_use_count      BIGINT,
	duration_ms         BIGINT,
	source              TEXT NOT NULL DEFAULT 'live',
	observed_at         TIMESTAMPTZ NOT NULL,
	settled_at          TIMESTAMPTZ,
	updated_at          TIMESTAMPTZ NOT NULL,
	CONSTRAINT task_session_subagents_key UNIQUE (task_session_id, agent_execution_id, tool_call_id),
	CONSTRAINT task_session_subagents_session_fk FOREIGN KEY (task_session_id) REFERENCES %s(id) ON DELETE CASCADE
)`

const (
	tableExists = `SELECT to_regclass(?) IS NOT NULL`

	// createJSONFunction defines subagentctx_jsonb_object(text): the text
	// parsed once as a jsonb object, or {} for NULL, '', invalid JSON, a
	// non-object, or a document jsonb cannot hold (a \u0000 escape).
	// PostgreSQL 15 has no non-raising JSON test, so the cast runs in an
	// exception block; it is only reached for messages whose text contains
	// subagent_task. PARALLEL UNSAFE: an exception block opens a
	// subtransaction, which a parallel worker cannot ("cannot start
	// subtransactions during a parallel operation" on any table big enough
	// for a parallel scan). Created once, never replaced (a concurrent CREATE
	// OR REPLACE can fail with "tuple concurrently updated").
	createJSONFunction = `DO $do$ BEGIN
IF to_regprocedure('subagentctx_jsonb_object(text)') IS NULL THEN
CREATE FUNCTION subagentctx_jsonb_object(doc text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $f$
DECLARE j jsonb;
BEGIN
	IF doc IS NULL OR doc = '' THEN RETURN '{}'::jsonb; END IF;
	j := doc::jsonb;
	IF jsonb_typeof(j) = 'object' THEN RETURN j; END IF;
	RETURN '{}'::jsonb;
EXCEPTION WHEN others THEN
	RETURN '{}'::jsonb;
END $f$;
END IF;
END $do$`
)

// CreateStatements implements sqlstore.Dialect.
func (Dialect) CreateStatements(t core.HostTables) []string {
	return []string{
		fmt.Sprintf(createTable, core.QuoteIdentifier(t.Sessions)),
		createJSONFunction,
	}
}

// TableExists implements sqlstore.Dialect.
func (Dialect) TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error) {
	var ok bool
	err := db.WithContext(ctx).Raw(tableExists, core.QuoteIdentifier(name)).Scan(&ok).Error
	return ok, err
}

// Instant implements sqlstore.Dialect. EXTRACT(EPOCH …) is exact (numeric)
// and independent of the session time zone for both TIMESTAMPTZ (an
// instant) and TIMESTAMP (read as UTC, as a Go host's driver writes it).
func (Dialect) Instant(x string) string { return "(EXTRACT(EPOCH FROM " + x + ") * 1000000)::bigint" }

// HostTime implements sqlstore.Dialect: a TIMESTAMP column holds UTC wall
// time (what a Go driver writes for a UTC time.Time) and becomes an instant
// with AT TIME ZONE 'UTC', never through the session's TimeZone; a
// TIMESTAMPTZ column is an instant already.
func (Dialect) HostTime(ctx context.Context, db *gorm.DB, table, column string) (func(string) string, error) {
	var typ string
	err := db.WithContext(ctx).Raw(`SELECT data_type FROM (`+columnTypes+`) c WHERE c.column_name = ?`, core.QuoteIdentifier(table), column).Scan(&typ).Error
	switch {
	case err != nil:
		return nil, err
	case typ == "timestamp without time zone":
		return func(x string) string { return "(" + x + " AT TIME ZONE 'UTC')" }, nil
	case typ == "timestamp with time zone":
		return func(x string) string { return x }, nil
	case typ == "":
		return nil, fmt.Errorf("column %s.%s does not exist", table, column)
	}
	return nil, fmt.Errorf("column %s.%s has type %s: want timestamp or timestamptz", table, column, typ)
}

// Classify implements sqlstore.Dialect: SQLSTATE class 23 is a constraint
// violation; class 08, admin shutdown (57P01-57P03), and connection-level
// failures are unavailability.
func (Dialect) Classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "23"):
			return core.ErrConstraint
		case strings.HasPrefix(pgErr.Code, "08"), pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03":
			return core.ErrUnavailable
		}
		return nil
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) {
		return core.ErrUnavailable
	}
	return nil
}

// redactErr removes the DSN's password from an error's message, keeping the
// error itself reachable for errors.Is/As.
func redactErr(err error, dsn string) error {
	msg := RedactText(err.Error(), dsn)
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// MessageDocument implements sqlstore.Dialect.
func (Dialect) MessageDocument(col string) string {
	return "CASE WHEN strpos(" + col + ", 'subagent_task') > 0 THEN subagentctx_jsonb_object(" + col + ") ELSE '{}'::jsonb END"
}

func jsonPath(path []string) string { return "'{" + strings.Join(path, ",") + "}'" }

// JSONText implements sqlstore.Dialect.
func (Dialect) JSONText(doc string, path ...string) string {
	p := jsonPath(path)
	return "CASE WHEN jsonb_typeof(" + doc + " #> " + p + ") = 'string' THEN NULLIF(" + doc + " #>> " + p + ", '') END"
}

// JSONInt implements sqlstore.Dialect: a JSON number with an integral
// value in range (1e3 and 2.0 count; 1.5 and 2^63 do not). Nested CASEs fix
// the order of evaluation: the cast runs only on a number.
func (Dialect) JSONInt(doc string, min int64, path ...string) string {
	p := jsonPath(path)
	v := "(" + doc + " #>> " + p + ")::numeric"
	return fmt.Sprintf("CASE WHEN jsonb_typeof(%s #> %s) = 'number' THEN CASE WHEN %s = trunc(%s) AND %s BETWEEN %d AND 9223372036854775807 THEN %s::bigint END END",
		doc, p, v, v, v, min, v)
}

// JSONBool implements sqlstore.Dialect: true, or a number equal to 1.
func (Dialect) JSONBool(doc string, path ...string) string {
	p := jsonPath(path)
	t := "jsonb_typeof(" + doc + " #> " + p + ")"
	return "CASE " + t + " WHEN 'boolean' THEN CASE WHEN (" + doc + " #>> " + p + ") = 'true' THEN 1 ELSE 0 END" +
		" WHEN 'number' THEN CASE WHEN (" + doc + " #>> " + p + ")::numeric = 1 THEN 1 ELSE 0 END ELSE 0 END"
}

// columnTypes reads a table's column types from pg_catalog (a query on
// information_schema's views costs milliseconds, at every boot).
const columnTypes = `SELECT a.attname AS column_name, format_type(a.atttypid, NULL) AS data_type FROM pg_attribute a
	WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped`

// Shape implements sqlstore.Dialect from pg_catalog.
func (Dialect) Shape(ctx context.Context, db *gorm.DB) (sqlstore.Shape, error) {
	var shape sqlstore.Shape
	ok, err := Dialect{}.TableExists(ctx, db, core.Table)
	if err != nil || !ok {
		return shape, err
	}
	shape.Exists = true
	type column struct{ ColumnName, DataType string }
	var cols []column
	if err := db.WithContext(ctx).Raw(columnTypes, core.Table).Scan(&cols).Error; err != nil {
		return shape, err
	}
	shape.Wide = true
	for _, c := range cols {
		switch c.ColumnName {
		case "agent_execution_id":
			shape.HasExecutionColumn = true
		case "total_tokens", "tool_use_count", "duration_ms":
			shape.Wide = shape.Wide && c.DataType == "bigint"
		case "observed_at", "settled_at", "updated_at":
			shape.Wide = shape.Wide && c.DataType == "timestamp with time zone"
		}
	}
	var idx []sqlstore.CatalogIndex
	err = db.WithContext(ctx).Raw(catalogIndexes).Scan(&idx).Error
	return sqlstore.ShapeFrom(shape, idx), err
}

// catalogIndexes lists the table's indexes (unique constraints included,
// the primary key excluded) with their columns in key order.
const catalogIndexes = `SELECT c.relname AS name, i.indisunique AS "unique",
	(SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
	 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) AS columns
	FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	WHERE i.indrelid = 'task_session_subagents'::regclass AND NOT i.indisprimary`

// Upgrade implements sqlstore.Dialect in place: add the column with its
// DEFAULT (every row gets 'unknown'), drop the legacy key, add the
// three-column key, widen metrics to BIGINT and timestamps to TIMESTAMPTZ
// (TIMESTAMP values are UTC wall time), create the indexes. PostgreSQL DDL is
// transactional: all of it commits or none.
func (d Dialect) Upgrade(ctx context.Context, tx *gorm.DB, _ core.HostTables, hook func(string) error) error {
	db := tx.WithContext(ctx)
	exec := func(stage, sql string) error {
		if err := db.Exec(sql).Error; err != nil {
			return fmt.Errorf("%s: %w", stage, err)
		}
		return hook(stage)
	}
	if err := exec("add column", `ALTER TABLE task_session_subagents ADD COLUMN IF NOT EXISTS agent_execution_id TEXT NOT NULL DEFAULT 'unknown'`); err != nil {
		return err
	}
	var idx []struct {
		Name       string
		Unique     bool
		Columns    string
		Constraint bool
	}
	if err := db.Raw(`SELECT c.relname AS name, i.indisunique AS "unique", x.columns,
		EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype = 'u') AS "constraint"
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		CROSS JOIN LATERAL (SELECT string_agg(a.attname, ',' ORDER BY k.ord) AS columns FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) x
		WHERE i.indrelid = 'task_session_subagents'::regclass AND NOT i.indisprimary`).Scan(&idx).Error; err != nil {
		return err
	}
	hasKey := false
	for _, i := range idx {
		switch {
		case i.Unique && i.Columns == sqlstore.LegacyKeyColumns && i.Constraint:
			if err := exec("drop legacy key", `ALTER TABLE task_session_subagents DROP CONSTRAINT `+core.QuoteIdentifier(i.Name)); err != nil {
				return err
			}
		case i.Unique && i.Columns == sqlstore.LegacyKeyColumns:
			if err := exec("drop legacy key", `DROP INDEX `+core.QuoteIdentifier(i.Name)); err != nil {
				return err
			}
		case i.Unique && i.Columns == sqlstore.KeyColumns:
			hasKey = true
		}
	}
	if !hasKey {
		if err := exec("add key", `ALTER TABLE task_session_subagents ADD CONSTRAINT task_session_subagents_key UNIQUE (task_session_id, agent_execution_id, tool_call_id)`); err != nil {
			return err
		}
	}
	var types []struct{ ColumnName, DataType string }
	if err := db.Raw(columnTypes, core.Table).Scan(&types).Error; err != nil {
		return err
	}
	for _, c := range types {
		switch {
		case (c.ColumnName == "total_tokens" || c.ColumnName == "tool_use_count" || c.ColumnName == "duration_ms") && c.DataType != "bigint":
			if err := exec("widen metrics", `ALTER TABLE task_session_subagents ALTER COLUMN `+c.ColumnName+` TYPE BIGINT`); err != nil {
				return err
			}
		case (c.ColumnName == "observed_at" || c.ColumnName == "settled_at" || c.ColumnName == "updated_at") && c.DataType == "timestamp without time zone":
			if err := exec("timestamps to timestamptz", `ALTER TABLE task_session_subagents ALTER COLUMN `+c.ColumnName+
				` TYPE TIMESTAMPTZ USING `+c.ColumnName+` AT TIME ZONE 'UTC'`); err != nil {
				return err
			}
		}
	}
	for _, q := range sqlstore.IndexStatements {
		if err := exec("create indexes", q); err != nil {
			return err
		}
	}
	return hook("before commit")
}

// Fence implements sqlstore.Dialect: PostgreSQL never pulls up a subquery
// that has an OFFSET.
func (Dialect) Fence() string { return "OFFSET 0" }

// WritableCTE implements sqlstore.Dialect.
func (Dialect) WritableCTE() bool { return true }
