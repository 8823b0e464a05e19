// Package postgres keeps task_session_subagents in PostgreSQL through GORM
// and gorm.io/driver/postgres (pgx, pure Go: no cgo). Its constructors
// return the shared *sqlstore.Store with PostgreSQL's Dialect.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
)

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

// Open connects with dsn and opens the store, creating
// task_session_subagents if absent. The host's sessions table must exist
// (sqlstore.ErrNoSessionsTable). Close releases the connections.
func Open(ctx context.Context, dsn string, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	if err := sqlstore.CheckOptions(opts...); err != nil {
		return nil, err // refused before any connection
	}
	db, err := OpenDB(dsn)
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	s, err := sqlstore.New(db, Dialect{}, opts...)
	if err == nil {
		err = s.EnsureSchema(ctx)
	}
	if err != nil {
		return nil, errors.Join(redactErr(err, dsn), sqlDB.Close())
	}
	s.Own(sqlDB.Close)
	return s, nil
}

// New returns the store on a *gorm.DB the host already has, without
// touching the database; Close leaves the handle open. Create the table
// with EnsureSchema or the migration pass (package backfill).
func New(db *gorm.DB, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	return sqlstore.New(db, Dialect{}, opts...)
}

// NewSQL is New for a host that holds a *sql.DB (sqlx, database/sql with
// pgx's stdlib driver): the store uses the host's pool and opens no
// connection of its own.
func NewSQL(db *sql.DB, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	if db == nil {
		return nil, errors.New("subagentctx: postgres.NewSQL: *sql.DB is nil")
	}
	g, err := gorm.Open(gormpostgres.New(gormpostgres.Config{Conn: db}), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, DisableAutomaticPing: true})
	if err != nil {
		return nil, fmt.Errorf("subagentctx: postgres: wrap the host's *sql.DB: %w", err)
	}
	return New(g, opts...)
}

// Dialect is PostgreSQL's sqlstore.Dialect.
type Dialect struct{}

var _ sqlstore.Dialect = Dialect{}

// Name implements sqlstore.Dialect.
func (Dialect) Name() string { return "postgres" }

// ColumnType implements sqlstore.Dialect. Metrics are BIGINT (the upstream
// 32-bit INTEGER was a defect, docs/CONTRACT.md §8.1); timestamps are
// TIMESTAMPTZ: instants, so neither writing nor comparing depends on the
// session's TimeZone.
func (Dialect) ColumnType(t core.Type) string {
	switch t {
	case core.Int64:
		return "BIGINT"
	case core.Bool:
		return "INTEGER"
	case core.Time:
		return "TIMESTAMPTZ"
	}
	return "TEXT"
}

// metadataFunction is the one function this library creates: the
// metadata text parsed once as a jsonb object, or {} when it is NULL,
// longer than jsonb.MaxBytes, not JSON jsonb accepts, not an object, or
// nested jsonb.MaxDepth levels deep (docs/CONTRACT.md §4.2). PostgreSQL 15
// has no non-raising JSON test, so the cast runs in an exception block. It
// is PARALLEL UNSAFE: an exception block opens a subtransaction, which a
// parallel worker cannot ("cannot start subtransactions during a parallel
// operation" on any table big enough for a parallel scan). Created once,
// never replaced (a concurrent CREATE OR REPLACE can fail with "tuple
// concurrently updated"); a new body gets a new name.
const metadataFunction = `DO $do$ BEGIN
IF to_regprocedure('subagentctx_metadata_v1(text)') IS NULL THEN
CREATE FUNCTION subagentctx_metadata_v1(doc text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $f$
DECLARE j jsonb;
BEGIN
	IF doc IS NULL OR octet_length(doc) > 16777216 THEN RETURN '{}'::jsonb; END IF;
	j := doc::jsonb;
	IF jsonb_typeof(j) <> 'object' OR j @? 'strict $.**{1000}' THEN RETURN '{}'::jsonb; END IF;
	RETURN j;
EXCEPTION WHEN others THEN
	RETURN '{}'::jsonb;
END $f$;
END IF;
END $do$`

// SchemaExtras implements sqlstore.Dialect.
func (Dialect) SchemaExtras() []string { return []string{metadataFunction} }

// TableExists implements sqlstore.Dialect: a table visible on the
// search_path.
func (Dialect) TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error) {
	var ok bool
	err := db.WithContext(ctx).Raw(`SELECT to_regclass(?) IS NOT NULL`, `"`+name+`"`).Scan(&ok).Error
	return ok, err
}

// Instant implements sqlstore.Dialect. EXTRACT(EPOCH …) is exact (numeric)
// and independent of the session time zone for TIMESTAMPTZ.
func (Dialect) Instant(x string) string { return "(EXTRACT(EPOCH FROM " + x + ") * 1000000)::bigint" }

// The microsecond bounds of a readable host instant: after Go's zero time,
// before year 10000 (docs/CONTRACT.md §4.2).
var (
	minInstant = time.Time{}.UnixMicro() + 1
	maxInstant = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// HostInstant implements sqlstore.Dialect: Unix microseconds, for either
// column type. EXTRACT(EPOCH …) reads a TIMESTAMPTZ as its instant and a
// TIMESTAMP as UTC wall time (what a Go host's driver writes for a UTC
// time.Time), never through the session's TimeZone. Infinite values and
// years outside 1-9999 are NULL.
func (Dialect) HostInstant(x string) string {
	e := "(EXTRACT(EPOCH FROM " + x + ") * 1000000)"
	return fmt.Sprintf("CASE WHEN isfinite(%s) THEN CASE WHEN %s BETWEEN %d AND %d THEN %s::bigint END END", x, e, minInstant, maxInstant, e)
}

// HostInstantArg implements sqlstore.Dialect: host instants are
// microseconds, so the bound is t rounded up to the next one.
func (Dialect) HostInstantArg(t time.Time) any { return core.CeilMicro(t).UnixMicro() }

// ParseHostInstant implements sqlstore.Dialect.
func (Dialect) ParseHostInstant(v any) (*time.Time, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		t := time.UnixMicro(x).UTC()
		return &t, nil
	}
	return nil, fmt.Errorf("host instant %v is a %T, want an integer", v, v)
}

// Bytewise implements sqlstore.Dialect: the C collation compares bytes,
// whatever the database's own (an ICU locale orders linguistically).
func (Dialect) Bytewise(x string) string { return x + ` COLLATE "C"` }

// subagentMessages reads the messages with jsonb, whose rules the Go
// reference (backfill.Recover) follows exactly. Only messages whose text
// can spell the kind (literally, or through a \u escape) are parsed, once
// each: the function is called in FROM (LATERAL), where it is evaluated
// once per message, not in a subquery's select list, which the planner
// would copy into every reference. (An OFFSET 0 fence would do the same
// on one server, but keeps Citus from pushing the query down to shards.)
const subagentMessages = `SELECT e.message_id, e.task_session_id, e.task_id, e.tool_call_id,
		CASE WHEN e.task_session_id <> '' AND e.task_id <> '' AND e.message_id <> '' AND e.tool_call_id IS NOT NULL AND e.created IS NOT NULL
			AND octet_length(e.message_id) <= %[2]d AND octet_length(e.task_session_id) <= %[2]d AND octet_length(e.task_id) <= %[2]d
			AND octet_length(e.tool_call_id) <= %[2]d AND COALESCE(octet_length(e.turn_id), 0) <= %[2]d
			AND COALESCE(octet_length(e.parent_tool_call_id), 0) <= %[2]d THEN 1 ELSE 0 END AS recoverable,
		e.created, e.turn_id, e.parent_tool_call_id, e.subagent_type, e.description, e.agent_id, e.child_session_id, e.model,
		e.agent_status, e.tool_status, e.is_async, e.total_tokens, e.tool_use_count, e.duration_ms,
		%[19]s AS observed_at,
		CASE WHEN e.tool_status IN (%[3]s) THEN %[20]s END AS settled_at
	FROM (SELECT d.message_id, d.task_session_id, d.task_id, d.turn_id, d.created, d.updated,
			%[4]s AS tool_call_id,
			%[5]s AS parent_tool_call_id,
			%[6]s AS tool_status,
			%[7]s AS agent_status,
			%[8]s AS subagent_type,
			%[9]s AS description,
			%[10]s AS agent_id,
			%[11]s AS child_session_id,
			%[12]s AS model,
			%[13]s AS is_async,
			%[14]s AS total_tokens,
			%[15]s AS tool_use_count,
			%[16]s AS duration_ms
		FROM (SELECT m.id::text AS message_id, m.task_session_id::text AS task_session_id, m.task_id::text AS task_id,
				NULLIF(m.turn_id::text, '') AS turn_id,
				%[17]s AS created,
				%[18]s AS updated,
				f.doc
			FROM %[1]s m CROSS JOIN LATERAL subagentctx_metadata_v1(m.metadata::text) AS f(doc)
			WHERE strpos(m.metadata::text, 'subagent_task') > 0 OR strpos(m.metadata::text, E'\\u') > 0) d
		WHERE d.doc #>> '{normalized,kind}' = 'subagent_task') e`

// SubagentMessages implements sqlstore.Dialect.
func (d Dialect) SubagentMessages(t sqlstore.Tables) string {
	terminal := core.TerminalToolStatuses()
	for i, s := range terminal {
		terminal[i] = "'" + s + "'"
	}
	task := func(key string) []string { return []string{"normalized", "subagent_task", key} }
	return fmt.Sprintf(subagentMessages, `"`+t.Messages+`"`, core.MaxIDBytes, strings.Join(terminal, ", "),
		jsonText("tool_call_id"), jsonText("parent_tool_call_id"), jsonText("status"), jsonText(task("status")...),
		jsonText(task("subagent_type")...), jsonText(task("description")...), jsonText(task("agent_id")...),
		jsonText(task("child_session_id")...), jsonText(task("model")...), jsonBool(task("is_async")...),
		jsonInt(1, task("total_tokens")...), jsonInt(0, task("tool_use_count")...), jsonInt(1, task("duration_ms")...),
		d.HostInstant("m.created_at"), d.HostInstant("m.updated_at"), fromMicros("e.created"), fromMicros("e.updated"))
}

// fromMicros is the TIMESTAMPTZ of a Unix time in microseconds. A bigint
// times an interval goes through a double, which cannot hold every
// microsecond of years 1-9999 (9999-12-31T23:59:59.999999 would round to
// the year 10000): whole seconds and the remainder are added apart, each
// exact.
func fromMicros(us string) string {
	return "TIMESTAMPTZ 'epoch' + (" + us + " / 1000000) * INTERVAL '1 second' + (" + us + " % 1000000) * INTERVAL '1 microsecond'"
}

func jsonPath(path []string) string { return "'{" + strings.Join(path, ",") + "}'" }

// jsonText: a JSON string's value (” ⇒ NULL); any other value is NULL.
func jsonText(path ...string) string {
	p := jsonPath(path)
	return "CASE WHEN jsonb_typeof(d.doc #> " + p + ") = 'string' THEN NULLIF(d.doc #>> " + p + ", '') END"
}

// jsonInt: a JSON number whose value is an integer within 64 bits and at
// least min (1e3 and 2.0 count; 1.5 and 2^63 do not). Nested CASEs fix the
// order of evaluation: the cast runs only on a number.
func jsonInt(min int64, path ...string) string {
	p := jsonPath(path)
	v := "(d.doc #>> " + p + ")::numeric"
	return fmt.Sprintf("CASE WHEN jsonb_typeof(d.doc #> %s) = 'number' THEN CASE WHEN %s = trunc(%s) AND %s BETWEEN %d AND 9223372036854775807 THEN %s::bigint END END",
		p, v, v, v, min, v)
}

// jsonBool: 1 for true or a number equal to 1, else 0. The searched CASE
// (not CASE x WHEN …) because Citus deparses the simple form, once the
// planner has rewritten it, into SQL the workers reject.
func jsonBool(path ...string) string {
	p := jsonPath(path)
	t := "jsonb_typeof(d.doc #> " + p + ")"
	return "CASE WHEN " + t + " = 'boolean' THEN CASE WHEN (d.doc #>> " + p + ") = 'true' THEN 1 ELSE 0 END" +
		" WHEN " + t + " = 'number' THEN CASE WHEN (d.doc #>> " + p + ")::numeric = 1 THEN 1 ELSE 0 END ELSE 0 END"
}

// BackfillForm implements sqlstore.Dialect: one statement with a writable
// CTE, or on Citus two pushed down to the shards, after a plan. The insert
// anti-joins the table it inserts into, and the planner can only guess how
// many messages match (a function's result decides). Planned as a nested
// loop over a table its statistics call empty (new, or emptied by a
// rolled-back pass and vacuumed), each probe re-reads every row inserted so
// far: quadratic in the history. With nested loops disabled, the joins are
// hashed or merged, linear whatever the estimates (the LATERAL call, which
// only a nested loop can run, still gets one). A disabled plan type
// inflates the costs past jit_above_cost, and compiling the statement
// would take longer than running it, so JIT is off too. On Citus the
// settings travel with the shards' statements.
func (Dialect) BackfillForm(distributed bool) sqlstore.BackfillForm {
	plan := []string{"SET LOCAL enable_nestloop = off", "SET LOCAL jit = off"}
	if distributed {
		plan = append([]string{"SET LOCAL citus.propagate_set_commands = 'local'"}, plan...)
	}
	return sqlstore.BackfillForm{Plan: plan}
}

// Pipeline implements sqlstore.Pipeliner through pgx's batch protocol: the
// statements of one transaction travel in one round trip instead of one
// each (measured: about 5 times the frames a second on a local server,
// where the round trip dominates). A pool whose driver is not pgx's stdlib
// is declined.
func (Dialect) Pipeline(ctx context.Context, pool *sql.DB, query string, args [][]any) (at int, ok bool, err error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return -1, true, err
	}
	defer conn.Close()
	at, ok = -1, true
	err = conn.Raw(func(driverConn any) error {
		c, isPgx := driverConn.(*stdlib.Conn)
		if !isPgx {
			ok = false
			return nil
		}
		tx, err := c.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		var b pgx.Batch
		for _, a := range args {
			b.Queue(query, a...)
		}
		results := tx.SendBatch(ctx, &b)
		for i := range args {
			if _, err := results.Exec(); err != nil {
				at = i
				return errors.Join(err, results.Close(), tx.Rollback(ctx))
			}
		}
		if err := results.Close(); err != nil {
			return errors.Join(err, tx.Rollback(ctx))
		}
		return tx.Commit(ctx)
	})
	return at, ok, err
}

// WithConn implements sqlstore.Dialect: nothing to prepare.
func (Dialect) WithConn(ctx context.Context, db *gorm.DB, fn func(*gorm.DB) error) error {
	return fn(db.WithContext(ctx))
}

// CheckHandle implements sqlstore.Dialect: the database must be UTF-8,
// the encoding every identifier and text rule of the contract is stated in
// (docs/CONTRACT.md §2, §4.2).
func (Dialect) CheckHandle(ctx context.Context, db *gorm.DB) error {
	var encoding string
	if err := db.WithContext(ctx).Raw(`SHOW server_encoding`).Scan(&encoding).Error; err != nil {
		return err
	}
	if encoding != "UTF8" {
		return fmt.Errorf("%w: the database's encoding is %s: subagentctx needs a UTF8 database (CREATE DATABASE … ENCODING 'UTF8')",
			sqlstore.ErrHandleSettings, encoding)
	}
	return nil
}

// Writers implements sqlstore.Dialect: PostgreSQL writes rows of different keys in parallel.
func (Dialect) Writers() int { return 4 }

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

// columnTypes reads a table's column types from pg_catalog (a query on
// information_schema's views costs milliseconds, at every boot).
const columnTypes = `SELECT a.attname AS column_name, format_type(a.atttypid, NULL) AS data_type FROM pg_attribute a
	WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped`

// Shape implements sqlstore.Dialect from pg_catalog.
func (Dialect) Shape(ctx context.Context, db *gorm.DB) (sqlstore.Shape, error) {
	var shape sqlstore.Shape
	ok, err := Dialect{}.TableExists(ctx, db, sqlstore.Table)
	if err != nil || !ok {
		return shape, err
	}
	shape.Exists = true
	var cols []struct{ ColumnName, DataType string }
	if err := db.WithContext(ctx).Raw(columnTypes, sqlstore.Table).Scan(&cols).Error; err != nil {
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
	idx, err := indexes(ctx, db)
	if err != nil {
		return shape, err
	}
	var catalog []sqlstore.CatalogIndex
	for _, i := range idx {
		catalog = append(catalog, i.CatalogIndex)
	}
	p, err := placement(ctx, db, `"`+sqlstore.Table+`"`)
	shape.Distributed = p.distributedBy("task_session_id")
	return sqlstore.ShapeFrom(shape, catalog), err
}

// catalogIndex is an index of the table, and the constraint it backs.
type catalogIndex struct {
	sqlstore.CatalogIndex
	Constraint string // the constraint's name, "" for a plain index
}

// indexes lists the table's indexes with their columns in key order.
func indexes(ctx context.Context, db *gorm.DB) ([]catalogIndex, error) {
	var out []struct {
		Name, Columns, Constraint string
		Unique, Primary           bool
	}
	err := db.WithContext(ctx).Raw(`SELECT c.relname AS name, i.indisunique AS "unique", i.indisprimary AS "primary", x.columns,
		COALESCE((SELECT k.conname FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype IN ('p', 'u')), '') AS "constraint"
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		CROSS JOIN LATERAL (SELECT string_agg(a.attname, ',' ORDER BY k.ord) AS columns FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) x
		WHERE i.indrelid = to_regclass('task_session_subagents')`).Scan(&out).Error
	idx := make([]catalogIndex, len(out))
	for n, i := range out {
		idx[n] = catalogIndex{CatalogIndex: sqlstore.CatalogIndex{Name: i.Name, Unique: i.Unique, Primary: i.Primary, Columns: i.Columns}, Constraint: i.Constraint}
	}
	return idx, err
}

// UpgradeStages implements sqlstore.Dialect.
func (Dialect) UpgradeStages() []string {
	return []string{"add column", "drop legacy key", "add key", "primary key", "widen metrics", "timestamps to timestamptz", "create indexes", "before commit"}
}

// Upgrade implements sqlstore.Dialect in place: add the execution column
// with its DEFAULT (every row gets 'unknown'), drop the first draft's key,
// add the three-column key, move the primary key to (task_session_id, id),
// widen metrics to BIGINT and timestamps to TIMESTAMPTZ (TIMESTAMP values
// are UTC wall time), create the indexes. PostgreSQL DDL is transactional:
// all of it commits or none.
func (d Dialect) Upgrade(ctx context.Context, tx *gorm.DB, _ sqlstore.Tables, hook func(string) error) error {
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
	idx, err := indexes(ctx, db)
	if err != nil {
		return err
	}
	hasKey, hasPrimary, oldPrimary := false, false, ""
	for _, i := range idx {
		switch {
		case i.Unique && sqlstore.IsLegacyKey(i.Columns) && i.Constraint != "":
			err = exec("drop legacy key", `ALTER TABLE task_session_subagents DROP CONSTRAINT "`+i.Constraint+`"`)
		case i.Unique && sqlstore.IsLegacyKey(i.Columns):
			err = exec("drop legacy key", `DROP INDEX "`+i.Name+`"`)
		case i.Unique && i.Columns == strings.Join(core.KeyColumns, ","):
			hasKey = true
		case i.Primary:
			hasPrimary = true
			if i.Columns != strings.Join(sqlstore.PrimaryKeyColumns, ",") {
				oldPrimary = i.Constraint
			}
		}
		if err != nil {
			return err
		}
	}
	if !hasKey {
		if err := exec("add key", `ALTER TABLE task_session_subagents ADD CONSTRAINT `+sqlstore.KeyConstraint+` UNIQUE (`+strings.Join(core.KeyColumns, ", ")+`)`); err != nil {
			return err
		}
	}
	if !hasPrimary || oldPrimary != "" {
		alter := `ALTER TABLE task_session_subagents `
		if oldPrimary != "" {
			alter += `DROP CONSTRAINT "` + oldPrimary + `", `
		}
		if err := exec("primary key", alter+`ADD PRIMARY KEY (`+strings.Join(sqlstore.PrimaryKeyColumns, ", ")+`)`); err != nil {
			return err
		}
	}
	var types []struct{ ColumnName, DataType string }
	if err := db.Raw(columnTypes, sqlstore.Table).Scan(&types).Error; err != nil {
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
	for _, q := range sqlstore.CreateIndexes() {
		if err := exec("create indexes", q); err != nil {
			return err
		}
	}
	return hook("before commit")
}
