// Package sqldialect is the interface a SQL database implements for
// package sqlstore, the way database/sql/driver is for database/sql. It is
// for authors of a dialect, not for hosts: adapters/sqlite and
// adapters/postgres implement it, a host holds a *sqlstore.Store, and it
// changes, in any version, when a statement needs something new from a
// dialect. Everything else — the DDL, the upsert, the lists, the migration
// pass's statements, health and statistics — is rendered by sqlstore from
// the column declaration (storekit.Columns) and the dialect's answers.
//
// The SQL it assumes: identifiers quoted by the GORM dialector the handle
// carries; INSERT … ON CONFLICT (key) DO UPDATE SET, whose SET list reads
// the stored row by the table's name and the frame's values by excluded;
// RETURNING; UPDATE … FROM; row values and EXISTS subqueries. Each concern
// is a small interface of its own — Fragments, MessageView, Catalog, which
// Dialect joins — so a third dialect is a guided job (docs/design.md, "A
// third dialect", says what each takes; sqltest.Driver's example, how its
// test runs the suite).
//
// A dialect may implement optional interfaces as well, each for what it
// buys:
//
//	interface          buys                                              sqlite  postgres
//	PassLocker         passes serialised across processes (§4)           yes     yes
//	PrivilegeChecker   a role's missing grant named at boot (§4.4)       –       yes
//	OnlineIndexer      indexes built without blocking writes             –       yes
//	Placement          a table sharded beside the sessions (Citus)       –       yes
//	Pipeliner          a batch's statements in one round trip            –       yes
//	Ceiling            one-sided time windows read through an index      yes     –
//	BoundedStatements  statements run without a cancellable context      yes     –
//	DefaultSetter      a column added for old rows without a rewrite     –       yes
//	Definer            a merge run as the owner, for any role            –       yes
//
// History meets live capture (docs/CONTRACT.md §8.5) by one of three
// mechanisms, which a dialect chooses in its UpsertForm: in the upsert
// itself (SQLite: a first ON CONFLICT on history's index, in
// adapters/sqlite/dialect.go), by a statement before the upserts in the
// write's transaction (PostgreSQL on one server, UpsertForm.Absorb:
// adapters/postgres/dialect.go and sqlstore's write.go), or by a trigger
// on a sharded table (Citus, UpsertForm.Sharded: adapters/postgres/citus.go
// and sqlstore's waves.go).
//
// sqlstore's testdata/<dialect>/*.sql holds every statement whole, per
// dialect.
package sqldialect

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/core/storekit"
	"gorm.io/gorm"
)

// Dialect is what one SQL database supplies (the package's doc says what
// it assumes, and which optional interfaces each dialect implements).
type Dialect interface {
	Fragments
	MessageView
	Catalog
}

// Fragments are the dialect's SQL pieces and its connection's behaviour:
// types, expressions, the upsert's form, errors, handle settings.
type Fragments interface {
	// Name is the dialect's name ("sqlite", "postgres").
	Name() string
	// ColumnType is the SQL type of a declared column type, as the DDL
	// spells it and as Describe reports it.
	ColumnType(storekit.Type) string
	// Instant is an SQL expression over one of this table's timestamp
	// columns: its Unix time in microseconds, a 64-bit integer. Every
	// comparison and ordering of those columns goes through it, so each is
	// exact and independent of the session's time zone (AC-24e).
	Instant(expr string) string
	// Within is the condition that the timestamp column x (of this
	// table) holds an instant in [since, until) — a zero bound open —
	// exact at the microsecond like Instant, with its arguments in order,
	// written so that an index on x serves the range.
	Within(x string, since, until time.Time) (string, []any)
	// ThroughIndex is the FROM item that reads table through its index
	// named index, for a statement bounded by that index's column whose
	// planner could otherwise prefer another (the table itself where the
	// planner's estimates need no help).
	ThroughIndex(table, index string) string
	// Extreme is the aggregate fn ("MIN" or "MAX") of the timestamp
	// column x over a group, as Instant gives it.
	Extreme(fn, x string) string
	// Bytewise makes a text expression compare byte by byte, whatever the
	// database's collation (docs/CONTRACT.md §8.4).
	Bytewise(expr string) string
	// Ordered is one of this table's timestamp columns as an index keeps
	// it: an expression an index can be declared on that sorts as
	// Instant(x) does; OrderedArg is the argument a bound on it takes.
	Ordered(x string) string
	OrderedArg(t time.Time) any
	// InFew is the condition that expr is among the values the subquery
	// returns — few of them, which no statistics can foresee — written so
	// that the planner looks each one up through an index on expr rather
	// than scanning the table.
	InFew(expr, subquery string) string
	// NearestRanks is a query over durations, queries of rows (dim, k,
	// source, duration_ms) with no NULL duration and one dim each, giving
	// rows (dim, k, source, m, rn, value): per dim and k, over both
	// sources (source 'all') and over each, the number m of its durations
	// and, for rn the median's and the 95th percentile's nearest rank
	// among them (storekit.Rank), the duration at rank rn in ascending
	// order.
	NearestRanks(durations []string) string
	// Upsert gives the upsert its form on this database: the statement
	// run once per row, assembled from the parts (u.Into, " VALUES ",
	// u.Values in the dialect's placeholders, " ON CONFLICT ", u.Key,
	// " DO UPDATE SET ", u.Set, for one), and how a write absorbs history
	// (docs/CONTRACT.md §3.2, §8.5).
	Upsert(u UpsertParts) UpsertForm
	// Classify maps a driver error to core.ErrConstraint (the frame's
	// own), core.ErrUnavailable (the database's passing state: kept and
	// retried) or nil (unknown: given up), by docs/CONTRACT.md §6.1's
	// table.
	Classify(err error) error
	// CheckHandle reports, with sqlstore.ErrHandleSettings, a setting of the
	// handle's connections the store depends on and cannot safely set
	// itself, naming the setting and how to set it.
	CheckHandle(ctx context.Context, db *gorm.DB) error
	// Writers is how many concurrent writers suit the database: a
	// recorder's default (storekit.WriterHint).
	Writers() int
}

// UpsertParts are the pieces of the upsert the dialect assembles
// (Fragments.Upsert).
type UpsertParts struct {
	// Into is INSERT INTO the table (Columns, then seam_checked), quoted
	// for the dialect:
	// INSERT INTO "task_session_subagents" ("id","task_session_id",…,"seam_checked").
	Into string
	// Key is the unique key's columns, quoted, in parentheses: the
	// conflict target of the upsert's ON CONFLICT.
	Key string
	// Set is the DO UPDATE SET list: each column of Columns its merge rule
	// gives an expression, quoted, reading the stored row by the table's
	// name and the frame's values by excluded. It binds no value.
	Set string
	// Rows is how many rows the statement inserts: one, or a wave's
	// (docs/CONTRACT.md §3.2) on a sharded table.
	Rows int
	// Columns are the columns Into names: storekit.Columns, or those
	// without the ones a row that reports none of them need not name (the
	// run's usage, the agent's own start), by which most rows are written.
	// They keep storekit.Columns' order and always include the key and the
	// id.
	Columns []storekit.Column
	// The rest are for absorbing history: when Insert inserts a row under
	// an execution id, the backfilled row of its (session, tool call id)
	// pair, if any, becomes one row with it (storekit.Absorbs,
	// storekit.Absorbed, docs/CONTRACT.md §8.5).
	//
	// History is the condition selecting that backfilled row, given how
	// the statement refers to the frame's value of a column (a trigger's
	// NEW.col, a placeholder, a column of the frames' rows).
	History func(new func(column string) string) string
	// Absorb is the SET list of an UPDATE that merges the backfilled
	// row's values (history refers to them) into the inserted row (target),
	// history's id included: a trigger's.
	Absorb func(history, target func(column string) string) string
	// HistoryIndex names the index of the backfilled rows not yet absorbed
	// (a dialect may declare it in its own form).
	HistoryIndex string
}

// Values is the VALUES list of Rows rows, each value value's: a
// placeholder in the dialect's syntax, numbered n from 1 across the rows
// in Columns' order, or an expression in its place; then seam_checked's
// 1, a constant: no row this build writes doubles a pair at the seam.
func (u UpsertParts) Values(value func(n int, c storekit.Column) string) string {
	var b strings.Builder
	for r := range u.Rows {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for i, c := range u.Columns {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(value(r*len(u.Columns)+i+1, c))
		}
		b.WriteString(",1)")
	}
	return b.String()
}

// UpsertForm is the upsert as a dialect runs it (Fragments.Upsert), and
// how a write absorbs its pairs' history (docs/CONTRACT.md §8.5): in the
// statement itself (SQLite), by a statement before it in the write's
// transaction (PostgreSQL on one server, Absorb), or by a trigger where
// the table is sharded (Citus, Sharded).
type UpsertForm struct {
	// Statement is run once per row, its arguments the row's values of
	// UpsertParts.Columns in their order, or as Args orders them.
	Statement string
	// Args, when not nil, is the index in UpsertParts.Columns of the value
	// each of Statement's placeholders takes, in their order: a statement
	// that reads a value more than once gives each reading its own
	// positional placeholder (modernc.org/sqlite binds numbered ones
	// matching every argument against every number, in time quadratic in
	// the row's width).
	Args []int
	// Schema are the objects the upsert needs on one server, made so once
	// the table has its declared shape (an earlier build's trigger gone).
	Schema []SchemaObject
	// Absorb, when not nil, absorbs history before the rows' upserts.
	Absorb *Absorbing
	// Sharded are the objects the upsert needs instead of Schema where
	// the table is sharded (Placement): there they absorb, and Absorb is
	// not run.
	Sharded []SchemaObject
}

// Absorbing is how a write's transaction absorbs history before its rows'
// upserts (UpsertForm.Absorb).
type Absorbing struct {
	// Statement is run before the upserts of the rows it names, its
	// arguments four arrays of their task_session_id, tool_call_id,
	// agent_execution_id and id, in the order they are written, each a
	// row that may insert its key: the backfilled row of each named pair,
	// if there is one, takes the execution id of the first of the pair's
	// rows whose own key has no row and whose id is not another row's.
	// That row's upsert then lands on it by its key and merges by the
	// ordinary rules.
	Statement string
	// Lock is run first in a write's transaction of more than one row,
	// its arguments two arrays of the task_session_id and
	// tool_call_id of every row: it takes a lock per pair, held to the
	// transaction's end, in one order, which every write of this library
	// takes too. Writes sharing a pair then take turns, and none waits for
	// another's rows while holding rows the other waits for: the library's
	// own writers never deadlock (a write absorbing first would otherwise
	// lock the history of later pairs before the rows of earlier ones).
	Lock string
	// Plan and Restore, neither with arguments, are run just before and
	// just after each Statement: Plan sets the planner's settings under
	// which it is planned as index probes whatever the table's
	// statistics, and Restore sets them back as they were, for the
	// transaction's other statements (a host's own among them).
	Plan, Restore string
}

// MessageView is how the dialect reads the host's messages
// (docs/CONTRACT.md §4.2) for the backfill, health and coverage.
type MessageView interface {
	// SubagentMessages is a SELECT over the host's messages yielding one
	// row per subagent message with the columns MessageColumns names,
	// exactly as history.Recover reads it, derived from the column
	// declaration's metadata paths. where, when not empty, is a condition
	// on the raw message m (its columns as the host stores them) that
	// restricts the messages read before any is parsed: a window, or a set
	// of sessions.
	SubagentMessages(t Tables, where string) string
	// NewestSubagentMessages is the backfill's source: of SubagentMessages'
	// recoverable rows, the first of each (task_session_id, tool_call_id)
	// pair by window (a ROW_NUMBER() over the view's columns, unqualified),
	// with the columns MessageColumns names. A dialect may read the
	// metadata's other columns after ranking, of those rows alone (Newest
	// over the whole view, where it does not).
	NewestSubagentMessages(t Tables, window string) string
	// SubagentKeys is SubagentMessages with only the columns
	// MessageKeyColumns names (or more): what health reads of each
	// message, which a dialect may read more cheaply than the whole row.
	SubagentKeys(t Tables, where string) string
	// HostTimeText reports whether the host's timestamps are text (SQLite,
	// which has no timestamp type), read in any of the forms
	// history.ParseHostTime reads, at nanosecond precision; otherwise they
	// are typed timestamps at the database's precision. The conformance
	// suite (sqltest) stores them in every form a dialect reads.
	HostTimeText() bool
	// HostInstant is an SQL expression over a host timestamp column
	// (messages' created_at, updated_at): a value that orders and compares
	// as the instant at the host's full precision, NULL when the value is
	// not an instant in years 1-9999.
	HostInstant(expr string) string
	// HostWithin is the condition that the host timestamp column x
	// (messages' created_at) holds an instant in [since, until) — a zero
	// bound open — exactly as HostInstant compares it, with its arguments
	// in order. It bounds the raw column first, so that an index on it
	// serves a window: by a superset where the host's column type and
	// time zone leave its order unknown.
	HostWithin(x string, since, until time.Time) (string, []any)
	// HostInstantArg is t as a bound value comparable with HostInstant:
	// HostInstant(x) >= HostInstantArg(t) exactly when x is at or after t.
	HostInstantArg(t time.Time) any
	// ParseHostInstant reads a scanned HostInstant value (nil for NULL).
	ParseHostInstant(v any) (*time.Time, error)
	// WithConn runs fn on one connection of db prepared for the view's
	// fragments (SQLite registers its functions there).
	WithConn(ctx context.Context, db *gorm.DB, fn func(*gorm.DB) error) error
	// BackfillForm is how the backfill runs on this dialect; distributed
	// tells whether the table is sharded (Placement).
	BackfillForm(distributed bool) BackfillForm
}

// BackfillForm is how a dialect runs the backfill (docs/CONTRACT.md §4.1).
type BackfillForm struct {
	// Staged: the newest messages are staged in a temporary table by one
	// scan before the backfill's transaction begins, and the transaction
	// reads them there (SQLite: the scan holds no write lock, so the
	// host's own writes never wait for it). Otherwise the backfill is one
	// statement, or, on a sharded table, one per part, each run on every
	// shard.
	Staged bool
	// Begin opens the transaction of the backfill (and of the shape
	// step): "" for BEGIN; SQLite begins IMMEDIATE, taking the write lock
	// at once, so no live write can come between what the transaction
	// reads and what it writes.
	Begin string
	// Lock is run first in that transaction to serialise it with the live
	// writes, so that neither misses the other's rows (PostgreSQL: a table
	// lock the live upserts wait for; "" where Begin already does it).
	Lock string
	// Plan are planner settings run next in the backfill's transaction.
	Plan []string
}

// Catalog is the table's shape as the database's catalog describes it,
// and the numbered steps that bring an older shape to the declared one.
type Catalog interface {
	// TableExists reports whether a table of that (validated, unqualified)
	// name is visible.
	TableExists(ctx context.Context, db *gorm.DB, name string) (bool, error)
	// Describe reads a table's columns (types spelled as ColumnType spells
	// them), keys, indexes and foreign keys.
	Describe(ctx context.Context, db *gorm.DB, name string) (TableInfo, error)
	// SchemaExtras are the objects the dialect's fragments call
	// (PostgreSQL's metadata function).
	SchemaExtras() []SchemaObject
	// Steps are the dialect's numbered upgrade steps, the non-additive
	// changes the table went through, in order. Each runs inside the shape
	// step's transaction and does nothing to a table that has what it
	// brings.
	Steps() []Step
}

// SchemaObject is one object the store keeps beside its table — a
// function, a trigger — in this build's form.
type SchemaObject struct {
	// Create creates the object in this build's form, replacing an
	// earlier form; idempotent.
	Create string
	// Present is a query of one boolean: whether the object exists in
	// this build's form. The catalog decides, so that a role without DDL
	// rights never attempts DDL that has nothing to do (docs/CONTRACT.md
	// §4.4).
	Present string
	// Cleanup marks an object that removes or defuses what an earlier
	// release left — a trigger its replicas re-create when they restart
	// during a rolling deploy — and that this build's writes do not
	// need: a role that may not run it (not the table's owner) is not
	// stopped by it; sqlstore's EnsureSchema leaves it to the owner's next
	// pass and says so (sqlstore.ErrLeftToOwner).
	Cleanup bool
}

// OnlineIndexer is implemented by a dialect that can build an index on
// a populated table without blocking its writes (PostgreSQL's
// CONCURRENTLY). OnlineIndex returns the statements that build the index
// name, defined by on ("table(columns) [WHERE …]"), so — each run outside
// any transaction, replacing what an interrupted build left — or nil
// where the table described by info does not allow it.
type OnlineIndexer interface {
	OnlineIndex(info TableInfo, name, on string) []string
}

// Definer is implemented by a dialect whose database runs a function with
// its owner's privileges (PostgreSQL's SECURITY DEFINER). The seam check's
// merge, which deletes rows, then runs through such a function that the
// table owner's pass made, so that a pass as a role without DELETE (the
// live part's) merges too.
type Definer interface {
	// Define is the function name(at timestamptz): it runs statements in
	// order, each binding at where it has a placeholder (?), as the
	// function's owner, with the search_path pinned to the table's schema,
	// and returns the first statement's count of rows. A role that may not
	// create it leaves it to the owner (SchemaObject.Cleanup).
	Define(name string, statements []string) SchemaObject
	// Call is the statement that calls function name, binding at (?).
	Call(name string) string
}

// DefaultSetter is implemented by a dialect that can change a column's
// default in place. SetDefault returns the statement that gives table's
// column the default literal for the rows inserted after it. The pass
// then adds seam_checked with the default 1, which the rows present take
// without a rewrite, and gives later inserts 0. Without it the column is
// added with 0, and the pass's seam check marks every row present once:
// a rewrite of the table.
type DefaultSetter interface {
	SetDefault(table, column, literal string) string
}

// Step is one numbered, non-additive change of the table's shape
// (docs/CONTRACT.md §4 step 2). Its version is recorded in the meta table
// once it has run, so it never runs again.
type Step struct {
	Version int
	Name    string
	// Stages are the names Apply passes to hook, in order, when the step
	// has work to do (fault-injection tests walk them).
	Stages []string
	// Apply upgrades the table inside tx, every row kept; hook is called
	// after each statement with the stage's name (never nil).
	Apply func(ctx context.Context, tx *gorm.DB, t Tables, hook func(stage string) error) error
}

// Placement is implemented by a dialect whose database may shard the
// table (Citus). Without it the table lives on one server.
type Placement interface {
	// Distribute places task_session_subagents beside the host's sessions
	// when the database shards them (Citus: distributed by task_session_id,
	// colocated with the sessions table; the meta table, when createdMeta,
	// a reference table), and reports whether the table is sharded. It is a
	// no-op where the database does not shard, or while the table is
	// absent or not yet in its declared shape, and fails, saying why, when
	// the sessions are sharded and the table cannot follow them.
	Distribute(ctx context.Context, db *gorm.DB, t Tables, createdMeta bool) (sharded bool, err error)
	// Distributed reports whether task_session_subagents is sharded by
	// task_session_id.
	Distributed(ctx context.Context, db *gorm.DB) (bool, error)
}

// Pipeliner is implemented by a dialect whose driver can send many
// statements in one round trip (PostgreSQL's pipeline through pgx).
// Pipeline runs the statements in order, in one transaction; on a failed
// statement it rolls back and returns its index (at), or -1 when beginning
// or committing failed. ok is false when the pool's driver cannot pipeline
// (the store then sends the statements one at a time).
type Pipeliner interface {
	Pipeline(ctx context.Context, pool *sql.DB, stmts []Statement) (at int, ok bool, err error)
}

// Statement is one SQL statement and its arguments.
type Statement struct {
	SQL  string
	Args []any
}

// Ceiling is implemented by a dialect whose planner, keeping no
// histogram, takes a range open at its end for most of the table (SQLite):
// it then reads the table in the order asked for rather than search an
// index on the column. Ceiling is a condition every value of the
// timestamp column x that Within can accept satisfies — the range's end,
// where the planner sees it — so that a one-sided window (export --since)
// reads through an index on x.
type Ceiling interface{ Ceiling(x string) string }

// BoundedStatements is implemented by a dialect whose engine bounds each
// statement's waits itself (SQLite: the busy timeout; no network between):
// the store runs a batch's statements without the caller's cancellation,
// which the driver would watch at a cost per statement, and bounds the
// batch by its connection and transaction.
type BoundedStatements interface{ BoundedStatements() }

// TableInfo is a table as a catalog describes it.
type TableInfo struct {
	Exists bool
	// Partitioned: the table is a partitioned table's parent.
	Partitioned bool
	Columns     []ColumnInfo
	Indexes     []IndexInfo
	ForeignKeys []ForeignKeyInfo
}

// ColumnInfo is one column of a catalog.
type ColumnInfo struct {
	Name    string
	Type    string // as the dialect's ColumnType spells it
	NotNull bool
	Default string // an SQL literal, casts removed; "" for none
}

// IndexInfo is one index or unique constraint of a catalog.
type IndexInfo struct {
	Name       string
	Unique     bool
	Primary    bool
	Columns    []string // in key order
	Constraint string   // the constraint it backs ("" for a plain index)
	// Partial is an index with a WHERE clause: it holds, and constrains,
	// only the rows its predicate selects.
	Partial bool
}

// Key reports whether the index is a unique key over every row: unique and
// not partial.
func (x IndexInfo) Key() bool { return x.Unique && !x.Partial }

// ForeignKeyInfo is one foreign key of a catalog.
type ForeignKeyInfo struct {
	Column, RefTable, RefColumn, OnDelete string // OnDelete as SQL spells it: CASCADE, NO ACTION, …
}

// Column returns the named column, or nil.
func (t TableInfo) Column(name string) *ColumnInfo {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// Newest is MessageView.NewestSubagentMessages over a dialect's whole view:
// the view's recoverable rows ranked by window, the first of each pair.
func Newest(view, window string) string {
	return `SELECT ` + strings.Join(MessageColumns(), ", ") + `
	FROM (SELECT v.*, ` + window + ` AS rn FROM (` + view + `) v WHERE v.recoverable = 1) v
	WHERE v.rn = 1`
}

// MessageKeyColumns are the first columns of MessageColumns, which
// MessageView.SubagentKeys yields: the message's identity, whether it is
// recoverable and its created_at.
func MessageKeyColumns() []string {
	return []string{"message_id", "task_session_id", "task_id", "tool_call_id", "recoverable", "created"}
}

// MessageColumns are the columns of MessageView.SubagentMessages, in
// order: the message's identity, whether it is recoverable (0/1), its
// created_at as a HostInstant, then every column of the row history gives
// (HistoryColumns).
func MessageColumns() []string {
	out := MessageKeyColumns()
	for _, c := range HistoryColumns() {
		out = append(out, c.Name)
	}
	return out
}

// HistoryColumns are the columns a message gives its row beyond its
// identity (the message's id, session, task and tool call id) and what the
// backfill sets itself (agent_execution_id 'unknown', source 'backfill',
// updated_at): turn_id, the columns read from the metadata, observed_at
// and settled_at, in declaration order. The live-only columns (the agent's
// own lifecycle, the run's usage) are not among them: a message never
// carries them, and history leaves them NULL (docs/CONTRACT.md §3.4, §3.5).
func HistoryColumns() []storekit.Column {
	var out []storekit.Column
	for _, c := range storekit.Columns() {
		switch c.Name {
		case "id", "task_session_id", "task_id", "tool_call_id", "agent_execution_id", "source", "updated_at":
			continue
		}
		if c.LiveOnly {
			continue
		}
		out = append(out, c)
	}
	return out
}

// Grant is privileges on one table.
type Grant struct {
	Privileges []string
	Table      string
}

// PrivilegeChecker is implemented by a dialect whose database has roles
// (PostgreSQL): Lacking returns the first privilege, in the grants'
// order, that the session's role does not hold on its table (ok when it
// holds them all), asking for all of them in one statement — then any
// the dialect's own statements need on a function of the database's, as
// "FUNCTION name(types)". SQLite has none: the file's permissions decide
// (the contract's §4.4). Refused
// reports whether err is the database refusing the role a statement for
// want of a privilege or of ownership.
type PrivilegeChecker interface {
	Lacking(ctx context.Context, db *gorm.DB, grants []Grant) (privilege, table string, ok bool, err error)
	Refused(err error) bool
}

// PassLocker is implemented by a dialect that can serialise migration
// passes across processes (docs/CONTRACT.md §4): PostgreSQL and Citus by
// an advisory lock on the server, SQLite by a lock on a file beside the
// database. Both dialects implement it; a third without it runs passes
// unserialised, each step's own transaction its only guard.
type PassLocker interface {
	// LockPass waits for the pass's lock — shared, to wait only for a
	// pass in progress, or exclusive, to run one — until ctx ends, and
	// returns its release.
	LockPass(ctx context.Context, db *gorm.DB, shared bool) (release func(), err error)
}

// Any reports whether err or any error it wraps (errors.Join's included)
// satisfies match: a dialect's Classify looks for the frame's own cause
// anywhere in an error before the database's passing state.
func Any(err error, match func(error) bool) bool {
	if err == nil {
		return false
	}
	if match(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return Any(u.Unwrap(), match)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if Any(e, match) {
				return true
			}
		}
	}
	return false
}

// PoolOf is db's connection pool, seen through GORM's prepared-statement
// cache (gorm.Config.PrepareStmt); false for a host's transaction, whose
// statements all run on its one connection.
func PoolOf(db *gorm.DB) (*sql.DB, bool) {
	switch p := db.Statement.ConnPool.(type) {
	case *sql.DB:
		return p, true
	case *gorm.PreparedStmtDB:
		pool, ok := p.ConnPool.(*sql.DB)
		return pool, ok
	}
	return nil, false
}
