// Package sqlite is the embedded default: task_session_subagents in a SQLite
// database through GORM and gorm.io/driver/sqlite (mattn/go-sqlite3, cgo).
// Its constructors return the shared *sqlstore.Store with SQLite's Dialect.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
	gormsqlite "gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
)

// Pragmas are set in the DSN so that every pooled connection has them: WAL,
// a busy timeout instead of an immediate "database is locked", foreign keys
// on (SQLite's default is off, which would silently disable AC-16's
// cascade), and BEGIN IMMEDIATE for transactions so a writer never has to
// upgrade a read lock.
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

// OpenReadOnly opens an existing SQLite file for reading only: the
// connection refuses every write (mode=ro, query_only), for an operator's
// read commands and the web view.
func OpenReadOnly(path string) (*gorm.DB, error) {
	if path == "" {
		return nil, errors.New("subagentctx: sqlite: database path is empty")
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_query_only=1&_busy_timeout=10000"
	db, err := gorm.Open(gormsqlite.Open(dsn), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return nil, fmt.Errorf("subagentctx: sqlite: open %s read-only: %w", path, err)
	}
	return db, nil
}

// Open opens (creating if needed) the SQLite file at path and the store in
// it, creating task_session_subagents if absent. The host's sessions table
// must exist (sqlstore.ErrNoSessionsTable). Close releases the connections.
func Open(ctx context.Context, path string, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	if err := sqlstore.CheckOptions(opts...); err != nil {
		return nil, err // refused before any file is created
	}
	db, err := OpenDB(path)
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
		return nil, errors.Join(err, sqlDB.Close())
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

// NewSQL is New for a host that holds a *sql.DB opened with go-sqlite3
// (sqlx, database/sql): the store uses the host's pool and opens no
// connection of its own.
func NewSQL(db *sql.DB, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	if db == nil {
		return nil, errors.New("subagentctx: sqlite.NewSQL: *sql.DB is nil")
	}
	g, err := gorm.Open(gormsqlite.New(gormsqlite.Config{Conn: db}), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, DisableAutomaticPing: true})
	if err != nil {
		return nil, fmt.Errorf("subagentctx: sqlite: wrap the host's *sql.DB: %w", err)
	}
	return New(g, opts...)
}

// Dialect is SQLite's sqlstore.Dialect.
type Dialect struct{}

var _ sqlstore.Dialect = Dialect{}

// Name implements sqlstore.Dialect.
func (Dialect) Name() string { return "sqlite" }

// ColumnType implements sqlstore.Dialect. SQLite's INTEGER is 64-bit;
// TIMESTAMP columns hold go-sqlite3's UTC text form, compared through
// Instant.
func (Dialect) ColumnType(t core.Type) string {
	switch t {
	case core.Int64, core.Bool:
		return "INTEGER"
	case core.Time:
		return "TIMESTAMP"
	}
	return "TEXT"
}

// SchemaExtras implements sqlstore.Dialect: SQLite's helpers are Go
// functions registered on each connection (WithConn), not schema objects.
func (Dialect) SchemaExtras() []string { return nil }

// TableExists implements sqlstore.Dialect.
func (Dialect) TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error) {
	var n int64
	err := db.WithContext(ctx).Raw(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n).Error
	return n > 0, err
}

// Instant implements sqlstore.Dialect: the Unix time in microseconds of any
// text form SQLite's date functions accept ("YYYY-MM-DD HH:MM:SS[.f…][±HH:MM|Z]",
// with a space or T). The whole seconds go through unixepoch() with the
// fraction removed (SQLite's date functions round fractions to
// milliseconds, which could carry into the next second); the fraction's
// first six digits are added exactly. No string comparison and no
// julianday (AC-24e). This table's times are always written canonical, so
// six digits are all there are.
func (Dialect) Instant(x string) string {
	frac := "substr(" + x + ", 21)"
	digits := "substr(" + frac + ", 1, length(" + frac + ") - length(ltrim(" + frac + ", '0123456789')))"
	whole := "substr(" + x + ", 1, 19) || CASE WHEN substr(" + x + ", 20, 1) = '.' THEN ltrim(" + frac + ", '0123456789') ELSE substr(" + x + ", 20) END"
	return "(unixepoch(" + whole + ") * 1000000 + CASE WHEN substr(" + x + ", 20, 1) = '.' THEN CAST(substr(" + digits + " || '000000', 1, 6) AS INTEGER) ELSE 0 END)"
}

// instantLayout is a host instant as text that orders as the instant, at
// nanosecond precision: fixed width, UTC, years 0001-9999.
const instantLayout = "2006-01-02T15:04:05.000000000Z"

// HostInstant implements sqlstore.Dialect through the registered function
// subagentctx_instant, which reads the host's text with
// backfill.ParseHostTime.
func (Dialect) HostInstant(x string) string { return "subagentctx_instant(CAST(" + x + " AS TEXT))" }

// HostInstantArg implements sqlstore.Dialect.
func (Dialect) HostInstantArg(t time.Time) any { return t.UTC().Format(instantLayout) }

// ParseHostInstant implements sqlstore.Dialect.
func (Dialect) ParseHostInstant(v any) (*time.Time, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		t, err := time.Parse(instantLayout, x)
		if err != nil {
			return nil, fmt.Errorf("host instant %q: %w", x, err)
		}
		return &t, nil
	}
	return nil, fmt.Errorf("host instant %v is a %T, want text", v, v)
}

// Bytewise implements sqlstore.Dialect: SQLite's default collation, BINARY,
// compares bytes.
func (Dialect) Bytewise(x string) string { return x }

// subagentMessages reads every candidate message through the registered
// function subagentctx_message, which runs backfill.Recover: SQLite's own
// JSON functions read duplicate keys, surrogates and numbers differently
// from PostgreSQL (docs/CONTRACT.md §8.6). Only messages whose text can
// spell the kind (literally, or through a \u escape) reach the function.
const subagentMessages = `SELECT CAST(v.id AS TEXT) AS message_id, CAST(v.task_session_id AS TEXT) AS task_session_id,
		CAST(v.task_id AS TEXT) AS task_id, json_extract(v.x, '$.tool_call_id') AS tool_call_id,
		json_extract(v.x, '$.recoverable') AS recoverable, json_extract(v.x, '$.created') AS created,
		NULLIF(CAST(v.turn_id AS TEXT), '') AS turn_id, json_extract(v.x, '$.parent_tool_call_id') AS parent_tool_call_id,
		json_extract(v.x, '$.subagent_type') AS subagent_type, json_extract(v.x, '$.description') AS description,
		json_extract(v.x, '$.agent_id') AS agent_id, json_extract(v.x, '$.child_session_id') AS child_session_id,
		json_extract(v.x, '$.model') AS model, json_extract(v.x, '$.agent_status') AS agent_status,
		json_extract(v.x, '$.tool_status') AS tool_status, json_extract(v.x, '$.is_async') AS is_async,
		json_extract(v.x, '$.total_tokens') AS total_tokens, json_extract(v.x, '$.tool_use_count') AS tool_use_count,
		json_extract(v.x, '$.duration_ms') AS duration_ms, json_extract(v.x, '$.observed_at') AS observed_at,
		json_extract(v.x, '$.settled_at') AS settled_at
	FROM (SELECT m.id, m.task_session_id, m.task_id, m.turn_id,
			subagentctx_message(CAST(m.id AS TEXT), CAST(m.task_session_id AS TEXT), CAST(m.task_id AS TEXT), CAST(m.turn_id AS TEXT),
				CAST(m.metadata AS TEXT), CAST(m.created_at AS TEXT), CAST(m.updated_at AS TEXT)) AS x
		FROM %s m
		WHERE instr(m.metadata, 'subagent_task') > 0 OR instr(m.metadata, '\u') > 0
		LIMIT -1 OFFSET 0) v
	WHERE v.x IS NOT NULL`

// SubagentMessages implements sqlstore.Dialect.
func (Dialect) SubagentMessages(t sqlstore.Tables) string {
	return fmt.Sprintf(subagentMessages, `"`+t.Messages+`"`)
}

// BackfillForm implements sqlstore.Dialect: SQLite has no writable CTE, so
// the backfill stages the ranked messages.
func (Dialect) BackfillForm(bool) sqlstore.BackfillForm { return sqlstore.BackfillForm{Staged: true} }

// Distribute implements sqlstore.Dialect: SQLite never shards.
func (Dialect) Distribute(context.Context, *gorm.DB, sqlstore.Tables, bool) error { return nil }

// WithConn implements sqlstore.Dialect: fn runs on one connection of db on
// which subagentctx_message and subagentctx_instant are registered.
func (Dialect) WithConn(ctx context.Context, db *gorm.DB, fn func(*gorm.DB) error) error {
	return db.WithContext(ctx).Connection(func(tx *gorm.DB) error {
		conn, ok := tx.Statement.ConnPool.(*sql.Conn)
		if !ok {
			return fmt.Errorf("subagentctx: sqlite: want a connection, got %T", tx.Statement.ConnPool)
		}
		if err := conn.Raw(register); err != nil {
			return err
		}
		return fn(tx)
	})
}

func register(driverConn any) error {
	c, ok := driverConn.(*sqlite3.SQLiteConn)
	if !ok {
		return fmt.Errorf("subagentctx: sqlite: the handle's driver is %T, want mattn/go-sqlite3", driverConn)
	}
	if err := c.RegisterFunc("subagentctx_message", message, true); err != nil {
		return err
	}
	return c.RegisterFunc("subagentctx_instant", instant, true)
}

// recovered is a message's reading as subagentctx_message returns it.
type recovered struct {
	ToolCallID       *string `json:"tool_call_id"`
	Recoverable      int     `json:"recoverable"`
	Created          *string `json:"created"`
	ParentToolCallID *string `json:"parent_tool_call_id"`
	SubagentType     *string `json:"subagent_type"`
	Description      *string `json:"description"`
	AgentID          *string `json:"agent_id"`
	ChildSessionID   *string `json:"child_session_id"`
	Model            *string `json:"model"`
	AgentStatus      *string `json:"agent_status"`
	ToolStatus       *string `json:"tool_status"`
	IsAsync          int     `json:"is_async"`
	TotalTokens      *int64  `json:"total_tokens"`
	ToolUseCount     *int64  `json:"tool_use_count"`
	DurationMs       *int64  `json:"duration_ms"`
	ObservedAt       *string `json:"observed_at"`
	SettledAt        *string `json:"settled_at"`
}

// storedLayout is how go-sqlite3 writes a time.Time: what this table's
// TIMESTAMP columns hold.
const storedLayout = "2006-01-02 15:04:05.999999999-07:00"

// message is subagentctx_message: backfill.Recover on one message, as JSON
// (NULL when it is not a subagent message). Its text is valid UTF-8: every
// string comes from a document jsonb.Parse accepted.
func message(id, session, task, turn, metadata, created, updated any) (any, error) {
	str := func(v any) *string {
		if s, ok := v.(string); ok {
			return &s
		}
		return nil
	}
	hostTime := func(v any) *time.Time {
		if s, ok := v.(string); ok {
			if t, ok := backfill.ParseHostTime(s); ok {
				return &t
			}
		}
		return nil
	}
	r := backfill.Recover(backfill.Message{ID: str(id), TaskSessionID: str(session), TaskID: str(task), TurnID: str(turn),
		Metadata: str(metadata), CreatedAt: hostTime(created), UpdatedAt: hostTime(updated)})
	if !r.Subagent {
		return nil, nil
	}
	row := r.Row
	out := recovered{ParentToolCallID: row.ParentToolCallID, SubagentType: row.SubagentType, Description: row.Description,
		AgentID: row.AgentID, ChildSessionID: row.ChildSessionID, Model: row.Model, AgentStatus: row.AgentStatus,
		ToolStatus: row.ToolStatus, TotalTokens: row.TotalTokens, ToolUseCount: row.ToolUseCount, DurationMs: row.DurationMs}
	if row.ToolCallID != "" {
		out.ToolCallID = &row.ToolCallID
	}
	if r.Recoverable {
		out.Recoverable = 1
	}
	if row.IsAsync {
		out.IsAsync = 1
	}
	if r.Created != nil {
		c, o := r.Created.UTC().Format(instantLayout), row.ObservedAt.Format(storedLayout)
		out.Created, out.ObservedAt = &c, &o
	}
	if row.SettledAt != nil {
		s := row.SettledAt.Format(storedLayout)
		out.SettledAt = &s
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// instant is subagentctx_instant: a host timestamp as instantLayout text,
// or NULL when backfill.ParseHostTime cannot read it.
func instant(v any) any {
	if s, ok := v.(string); ok {
		if t, ok := backfill.ParseHostTime(s); ok {
			return t.UTC().Format(instantLayout)
		}
	}
	return nil
}

// CheckHandle implements sqlstore.Dialect on one connection of the handle
// (a pool's connections share its DSN's settings): foreign keys must be on
// (without them AC-16's cascade silently does nothing) and a busy timeout
// set (without it a write meeting another writer fails at once). Neither
// is safe to set from here: foreign_keys is per connection, so setting it
// on one would leave the pool's others off. WAL is recommended, not
// required: the store works in any journal mode, with more lock waits.
func (Dialect) CheckHandle(ctx context.Context, db *gorm.DB) error {
	var fk, busy int64
	var missing []string
	return db.WithContext(ctx).Connection(func(tx *gorm.DB) error {
		if err := tx.Raw(`PRAGMA foreign_keys`).Scan(&fk).Error; err != nil {
			return err
		}
		if err := tx.Raw(`PRAGMA busy_timeout`).Scan(&busy).Error; err != nil {
			return err
		}
		if fk != 1 {
			missing = append(missing, "foreign keys are off (add _foreign_keys=on to the go-sqlite3 DSN, as sqlite.DSN does): "+
				"without them deleting a session would leave its rows behind")
		}
		if busy <= 0 {
			missing = append(missing, "no busy timeout (add _busy_timeout=10000 to the DSN, as sqlite.DSN does): "+
				"without it a write that meets another fails at once")
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: %s", sqlstore.ErrHandleSettings, strings.Join(missing, "; "))
		}
		return nil
	})
}

// Writers implements sqlstore.Dialect: SQLite serialises writers: more would only wait on its lock.
func (Dialect) Writers() int { return 1 }

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

// Shape implements sqlstore.Dialect from sqlite_master and the pragmas.
func (Dialect) Shape(ctx context.Context, db *gorm.DB) (sqlstore.Shape, error) {
	var shape sqlstore.Shape
	ok, err := Dialect{}.TableExists(ctx, db, sqlstore.Table)
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
	err = db.WithContext(ctx).Raw(`SELECT il.name AS name, il."unique" AS "unique", il.origin = 'pk' AS "primary",
		(SELECT group_concat(name, ',' ORDER BY seqno) FROM pragma_index_info(il.name)) AS columns
		FROM pragma_index_list('task_session_subagents') il`).Scan(&idx).Error
	return sqlstore.ShapeFrom(shape, idx), err
}

// upgradeTable is the temporary name of the rebuilt table.
const upgradeTable = "task_session_subagents_upgrade"

// UpgradeStages implements sqlstore.Dialect.
func (Dialect) UpgradeStages() []string {
	return []string{"create new table", "copy rows", "drop old table", "rename", "before commit"}
}

// Upgrade implements sqlstore.Dialect. SQLite can neither drop a UNIQUE
// constraint nor change a primary key, so the table is rebuilt: create the
// end shape under a temporary name, copy every row (a missing
// agent_execution_id takes its DEFAULT 'unknown'), drop the old table,
// rename, and re-create its indexes (except the first draft's unique one)
// and the three required ones. SQLite DDL is transactional: all of it
// commits or none.
func (d Dialect) Upgrade(ctx context.Context, tx *gorm.DB, t sqlstore.Tables, hook func(string) error) error {
	db := tx.WithContext(ctx)
	var cols []string
	if err := db.Raw(`SELECT name FROM pragma_table_info('task_session_subagents') ORDER BY cid`).Scan(&cols).Error; err != nil {
		return err
	}
	var indexes []struct{ Name, SQL, Columns string }
	if err := db.Raw(`SELECT m.name, m.sql, (SELECT group_concat(name, ',' ORDER BY seqno) FROM pragma_index_info(m.name)) AS columns
		FROM sqlite_master m WHERE m.type = 'index' AND m.tbl_name = 'task_session_subagents' AND m.sql IS NOT NULL`).Scan(&indexes).Error; err != nil {
		return err
	}
	list := strings.Join(cols, ", ")
	steps := []struct{ stage, sql string }{
		{"create new table", "DROP TABLE IF EXISTS " + upgradeTable},
		{"create new table", sqlstore.CreateTable(d, upgradeTable, t)},
		{"copy rows", "INSERT INTO " + upgradeTable + " (" + list + ") SELECT " + list + " FROM " + sqlstore.Table},
		{"drop old table", "DROP TABLE " + sqlstore.Table},
		{"rename", "ALTER TABLE " + upgradeTable + " RENAME TO " + sqlstore.Table},
	}
	for i, st := range steps {
		if err := db.Exec(st.sql).Error; err != nil {
			return fmt.Errorf("%s: %w", st.stage, err)
		}
		if i > 0 { // the first two statements are one stage
			if err := hook(st.stage); err != nil {
				return err
			}
		}
	}
	for _, x := range indexes {
		if sqlstore.IsLegacyKey(x.Columns) {
			continue
		}
		if err := db.Exec(x.SQL).Error; err != nil {
			return fmt.Errorf("re-create index %s: %w", x.Name, err)
		}
	}
	for _, q := range sqlstore.CreateIndexes() {
		if err := db.Exec(q).Error; err != nil {
			return fmt.Errorf("create index: %w", err)
		}
	}
	return hook("before commit")
}
