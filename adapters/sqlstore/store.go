// Package sqlstore is the one SQL implementation of core.Store and
// report.Reader, shared by the SQLite and PostgreSQL adapters through GORM.
// Each adapter supplies a Dialect (adapters/sqlite, adapters/postgres) and
// constructors; everything else — the DDL and its evolution, the upsert,
// the lists, the migration pass's statements, health and statistics — is
// written once here, from the columns declared in storekit.Columns.
//
// A Store is what the adapters' constructors return:
//
//	store, err := sqlite.Open(ctx, "kandev.db")                // connects, creates the table if absent
//	store, err := postgres.New(hostDB, sqlstore.WithTables(t)) // wraps the host's *gorm.DB, touches nothing
//
// The verbs mean the same on every layer: Open connects and creates the
// schema; New wraps a handle and does no I/O; EnsureSchema creates what is
// missing. The migration pass (package migration) runs on a Store.
//
// Stability: the interface for writing a SQL dialect is not covered by the
// module's semver promise and may change in any version; the Store type and
// its constructors' options, which a host uses, are (README, Stability).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// Store keeps task_session_subagents in a SQL database. It is safe for
// concurrent use.
type Store struct {
	db     *gorm.DB
	d      sqldialect.Dialect
	tables Tables
	now    func() time.Time
	// form is the upsert in the dialect's form (Fragments.Upsert) around
	// the INSERT … ON CONFLICT GORM renders for this handle, built once at
	// New (a dry run: no I/O), with how it absorbs history; lean is its
	// statement without the sparse columns, for a row with none of them
	// (isLean).
	form sqldialect.UpsertForm
	lean sqldialect.UpsertForm
	// dropHistorySQL is an import's statement that drops a pair's history
	// written before it began (dropHistory), in the handle's placeholders.
	dropHistorySQL string
	// seamFunction is the function the seam check's merge runs through
	// where the dialect is a sqldialect.Definer (defineSeamCheck); nil elsewhere.
	seamFunction *seamFunction
	prepared     [2]atomic.Pointer[sql.Stmt] // form's and lean's statements, prepared on first use
	mu           sync.Mutex                  // serialises preparing them
	owned        func() error                // closes connections the store opened; nil for a host's handle
	checked      atomic.Bool                 // the handle's settings were checked (Fragments.CheckHandle)
	readOnly     bool                        // opened read-only (Open with ReadOnly)
	noSchema     bool                        // Open creates nothing (NoSchema)
	horizon      time.Duration               // the write horizon (WithWriteHorizon)
	// sharded is whether the table is sharded, once read: 0 not yet, 1
	// no, 2 yes (batches are then written in waves, waves.go);
	// waveStatements are the upserts of n rows, by n.
	sharded        atomic.Int32
	waveStatements sync.Map
	// metaFound is the meta table found in the database when the host
	// names none (MetaTable), once found.
	metaFound atomic.Pointer[string]
}

var (
	_ core.Store          = (*Store)(nil)
	_ report.Reader       = (*Store)(nil)
	_ storekit.BatchStore = (*Store)(nil)
	_ storekit.WriterHint = (*Store)(nil)
)

// The defaults of the store's options.
const (
	// DefaultPruneBatch is how many rows one statement of a prune deletes by
	// default: each batch is its own short transaction, so no lock is held for
	// long and the live writes interleave with it.
	DefaultPruneBatch = 1000

	// DefaultWriteHorizon bounds, by default, how long after stamping a row's
	// updated_at a write of the store may still commit (WithWriteHorizon):
	// half of it for the write, which the store cancels past that, half for
	// the clocks of the processes writing to one database.
	DefaultWriteHorizon = time.Minute
)

// Option configures a Store.
type Option func(*Store)

// WithTables names the host's tables (default: Tables' zero value).
func WithTables(t Tables) Option { return func(s *Store) { s.tables = t } }

// ReadOnly makes Open connect read-only: every write is refused by the
// database, and nothing is created (an operator's reads, the web view).
func ReadOnly() Option { return func(s *Store) { s.readOnly = true } }

// NoSchema makes Open create nothing: the migration pass will (its table
// step), or the host has created the table itself.
func NoSchema() Option { return func(s *Store) { s.noSchema = true } }

// New returns a store on db without touching the database. The host's table
// names are validated first (an *ErrInvalidTableName error names the one at
// fault).
func New(db *gorm.DB, d sqldialect.Dialect, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, liberr.Errorf("sqlstore.New: *gorm.DB is nil")
	}
	if d == nil {
		return nil, liberr.Errorf("sqlstore.New: the dialect is nil")
	}
	s, err := configure(opts)
	if err != nil {
		return nil, err
	}
	s.db, s.d, s.now = db, d, time.Now
	for _, f := range []struct {
		form *sqldialect.UpsertForm
		cols []storekit.Column
	}{{&s.form, columns}, {&s.lean, leanColumns}} {
		parts, err := s.upsertParts(1, f.cols)
		if err != nil {
			return nil, liberr.Errorf("render the upsert: %w", err)
		}
		*f.form = d.Upsert(parts)
	}
	// updated_at compared as stored, with an instant bound as the upserts
	// bind theirs (Citus refuses EXTRACT of a column in a DELETE).
	s.seamFunction = s.defineSeamCheck()
	s.dropHistorySQL = s.placeholders(`DELETE FROM ` + Table + ` WHERE task_session_id = ? AND tool_call_id = ?
	AND ` + backfilled("") + ` AND updated_at < ?`)
	return s, nil
}

// placeholders writes q's placeholders (?, none in a literal) in the
// handle's own form, for a statement run on the pool directly: $1… on
// PostgreSQL.
func (s *Store) placeholders(q string) string {
	stmt := &gorm.Statement{DB: s.db}
	var b strings.Builder
	for _, r := range q {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		stmt.Vars = append(stmt.Vars, nil)
		s.db.Dialector.BindVarTo(&b, stmt, nil)
	}
	return b.String()
}

// configure applies options to a new store, validating the table names
// (an *ErrInvalidTableName error names the one at fault).
func configure(opts []Option) (*Store, error) {
	s := &Store{horizon: DefaultWriteHorizon}
	for _, o := range opts {
		o(s)
	}
	if s.horizon <= 0 {
		return nil, liberr.Errorf("sqlstore: WithWriteHorizon(%v): want more than 0", s.horizon)
	}
	if err := s.tables.Validate(); err != nil {
		return nil, liberr.Errorf("%w", err)
	}
	s.tables = s.tables.WithDefaults()
	return s, nil
}

// Close releases the prepared statements and, when the store opened its
// own connections, closes them; a host's handle stays open.
func (s *Store) Close() error {
	var err error
	s.mu.Lock()
	for i := range s.prepared {
		if stmt := s.prepared[i].Swap(nil); stmt != nil {
			err = errors.Join(err, stmt.Close())
		}
	}
	s.mu.Unlock()
	if s.owned != nil {
		err = errors.Join(err, s.owned())
	}
	return err
}

// UpsertStatement is the statement the store runs once per row, in its
// dialect's form (docs/CONTRACT.md §8.5), its arguments a row's values
// in storekit.Columns order: what a benchmark times beside a hand-written
// upsert, or an operator explains.
func (s *Store) UpsertStatement() string { return s.form.Statement }

// DB is the underlying handle.
func (s *Store) DB() *gorm.DB { return s.db }

// Tables are the host's table names as configured, defaults filled in;
// Meta is empty when the host named none (MetaTable says which is in use).
func (s *Store) Tables() Tables { return s.tables }

// MetaTable is the meta table's name: the host's, else the one the
// database has — DefaultMetaTable, or KandevMetaTable where only that
// exists (a database an earlier release set up, or the reference host's)
// — else DefaultMetaTable, which the migration pass creates.
func (s *Store) MetaTable(ctx context.Context) (string, error) {
	name, err := s.metaName(ctx, s.db.WithContext(ctx))
	if err != nil {
		return "", s.opError("find the meta table", err)
	}
	return name, nil
}

// metaTable is MetaTable, with whether the table exists. A table found is
// kept for the store's life: neither candidate is ever dropped by the
// library, and a host that creates kandev_meta later does not move the
// keys away from the table that holds them.
func (s *Store) metaTable(ctx context.Context, db *gorm.DB) (name string, exists bool, err error) {
	if s.tables.Meta != "" {
		exists, err = s.tableExists(ctx, db, s.tables.Meta)
		return s.tables.Meta, exists, err
	}
	if found := s.metaFound.Load(); found != nil {
		return *found, true, nil
	}
	for _, name := range []string{DefaultMetaTable, KandevMetaTable} {
		if exists, err = s.tableExists(ctx, db, name); err != nil || exists {
			if exists {
				s.metaFound.Store(&name)
			}
			return name, exists, err
		}
	}
	return DefaultMetaTable, false, nil
}

// metaName is the meta table's name, for a statement that needs only
// that: a name the host gave costs no catalog read.
func (s *Store) metaName(ctx context.Context, db *gorm.DB) (string, error) {
	if s.tables.Meta != "" {
		return s.tables.Meta, nil
	}
	name, _, err := s.metaTable(ctx, db)
	return name, err
}

// tablesIn are the host's tables with the meta table in use filled in.
func (s *Store) tablesIn(ctx context.Context, db *gorm.DB) (Tables, error) {
	t := s.tables
	var err error
	t.Meta, err = s.metaName(ctx, db)
	return t, err
}

// EnsureSchema checks that the host's sessions table exists (else
// ErrNoSessionsTable) and creates task_session_subagents, its indexes, the
// meta table and the dialect's helpers if absent, and places a new table
// beside the sessions where the database shards them (Placement). It
// never alters an existing table: bringing one to its declared shape
// (with its indexes and what the upsert needs) is the migration pass's
// shape step (Pass.Evolve); for a table that already has that shape it creates
// what this build's upsert needs, if absent. The catalog decides: when
// everything is in place it runs no DDL at all, so an application role
// with only the live path's privileges (docs/CONTRACT.md §4.4) boots on
// a table its owner migrated. DDL runs under the migration pass's lock
// (Pass), so that processes booting together never race on a CREATE.
func (s *Store) EnsureSchema(ctx context.Context) error {
	_, err := s.makeSchema(ctx)
	return err
}

// makeSchema is EnsureSchema, returning the DDL statements it ran (none
// when everything was in place), so that the migration pass reports
// every change it made.
func (s *Store) makeSchema(ctx context.Context) (ran []string, err error) {
	if err := s.checkHandle(ctx); err != nil {
		return nil, err
	}
	ok, err := s.tableExists(ctx, s.db, s.tables.Sessions)
	if err != nil {
		return nil, s.opError("check the sessions table", err)
	}
	if !ok {
		return nil, liberr.Errorf(
			"%w: %q (task_session_subagents references it; name the host's table with sqlstore.WithTables)",
			ErrNoSessionsTable,
			s.tables.Sessions,
		)
	}
	// Before creating anything: sessions sharded so that the table cannot
	// follow them fail here, saying why, rather than in the DDL.
	sharded, err := s.distribute(ctx)
	if err != nil {
		return nil, err
	}
	if stmts, _, _, err := s.missingSchema(ctx, s.db.WithContext(ctx), sharded); err != nil || stmts.none() {
		return nil, err
	}
	ctx, release, err := s.holdPass(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	db := s.db.WithContext(ctx)
	// Read again under the lock: another process may have created it all.
	stmts, existed, metaExisted, err := s.missingSchema(ctx, db, sharded)
	if err != nil || stmts.none() {
		return nil, err
	}
	catalogOf(ctx).forget()
	if err := s.create(db, stmts.required); err != nil {
		return nil, err
	}
	ran = stmts.required
	left := s.create(db, stmts.cleanup)
	if left != nil && !errors.Is(left, ErrPrivilege) {
		return ran, left
	} else if left != nil {
		left = liberr.Errorf("%w: %w", ErrLeftToOwner, left)
	} else {
		ran = append(ran, stmts.cleanup...)
	}
	if !existed {
		// Created in the declared shape: every numbered step is in it.
		at := formatKey(s.now())
		for _, st := range s.steps(new(int64)) {
			if _, err := s.writeKey(db, versionKey(st.Version), at); err != nil {
				return ran, s.opError("record the schema version", err)
			}
		}
	}
	p, shards := s.d.(sqldialect.Placement)
	if !shards {
		return ran, left
	}
	tables, err := s.tablesIn(ctx, db)
	if err != nil {
		return ran, s.opError("check the meta table", err)
	}
	if sharded, err = p.Distribute(ctx, s.db, tables, !metaExisted); err != nil {
		return ran, s.opError("place the table beside the sessions", err)
	}
	if sharded { // placed now: what the upsert needs there
		return ran, errors.Join(s.makeObjects(db, s.form.Sharded), left)
	}
	return ran, left
}

// create runs DDL statements. On one connection of a pool: SQLite checks
// a CREATE's name against the connection's cached schema, so an index
// dropped on one pooled connection is still "already exists" to another.
// A host's transaction is one connection already, and holds the
// statements.
func (s *Store) create(db *gorm.DB, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	create := func(conn *gorm.DB) error {
		for _, stmt := range stmts {
			if err := conn.Exec(stmt).Error; err != nil {
				return fmt.Errorf("%w\n  in: %s", err, stmt)
			}
		}
		return nil
	}
	var err error
	if _, pool := sqldialect.PoolOf(db); pool {
		err = db.Connection(create)
	} else {
		err = create(db)
	}
	if err == nil {
		return nil
	}
	// DDL the pass needs and the role may not run — an object only the
	// table's owner may drop or replace, such as a trigger an earlier
	// release re-created — is the operator's to run, not a passing state
	// to retry in silence.
	if c, ok := s.d.(sqldialect.PrivilegeChecker); ok && c.Refused(err) {
		return liberr.Errorf("%w: the schema needs DDL only the table's owner may run (run the migration "+
			"pass as the owner: subagentctl migrate): %w", ErrPrivilege, s.opError("create schema", err))
	}
	return s.opError("create schema", err)
}

// makeObjects creates those of the objects that are not present.
func (s *Store) makeObjects(db *gorm.DB, objects []sqldialect.SchemaObject) error {
	present, err := presence(db, objects)
	if err != nil {
		return s.opError("check the schema's objects", err)
	}
	var stmts []string
	for i, o := range objects {
		if !present[i] {
			stmts = append(stmts, o.Create)
		}
	}
	if len(stmts) == 0 {
		return nil
	}
	catalogOf(db.Statement.Context).forget()
	return s.create(db, stmts)
}

// missingSchema reads the catalog and returns the DDL EnsureSchema has to
// run (none when the table, the meta table and this build's objects are
// in place), with whether the table and the meta table existed. sharded
// says where the table is placed (Placement).
func (s *Store) missingSchema(ctx context.Context, db *gorm.DB, sharded bool,
) (stmts ddl, existed, metaExisted bool, err error) {
	meta, metaExisted, err := s.metaTable(ctx, db)
	if err != nil {
		return ddl{}, false, false, s.opError("check the meta table", err)
	}
	if existed, err = s.tableExists(ctx, db, Table); err != nil {
		return ddl{}, false, false, s.opError("check the table", err)
	}
	if !existed {
		required := s.schemaStatements(false, meta)
		for _, o := range s.seamObjects() {
			required = append(required, o.Create)
		}
		return ddl{required: required}, false, metaExisted, nil
	}
	if !metaExisted {
		stmts.required = append(stmts.required, metaDDL(meta))
	}
	objects := s.d.SchemaExtras()
	info, err := s.describe(ctx, db)
	if err != nil {
		return ddl{}, true, metaExisted, s.opError("read the table's shape", err)
	}
	r := compare(s.d, s.tables, info)
	if len(r.missing) == 0 && len(r.diffs) == 0 { // the declared columns and keys: what depends on them
		// Built without blocking the writes where the dialect can: the
		// table may hold millions of rows (an earlier release's lacks
		// idx_subagents_session_order) — but in a host's transaction,
		// where CONCURRENTLY cannot run.
		_, pool := sqldialect.PoolOf(db)
		stmts.required = append(stmts.required, s.buildIndexes(info, r.indexes, pool)...)
		objects = append(append(objects, s.upsertObjects(sharded)...), s.seamObjects()...)
	}
	present, err := presence(db, objects)
	if err != nil {
		return ddl{}, true, metaExisted, s.opError("check the schema's objects", err)
	}
	for i, o := range objects {
		switch {
		case present[i]:
		case o.Cleanup:
			stmts.cleanup = append(stmts.cleanup, o.Create)
		default:
			stmts.required = append(stmts.required, o.Create)
		}
	}
	return stmts, true, metaExisted, nil
}

// ddl is the DDL EnsureSchema has to run: what the store needs, and the
// cleanups (SchemaObject.Cleanup) it is due.
type ddl struct{ required, cleanup []string }

func (d ddl) none() bool { return len(d.required) == 0 && len(d.cleanup) == 0 }

// presence asks whether each object exists, in one statement (a column
// per object's Present).
func presence(db *gorm.DB, objects []sqldialect.SchemaObject) ([]bool, error) {
	if len(objects) == 0 {
		return nil, nil
	}
	q := make([]string, len(objects))
	for i, o := range objects {
		q[i] = "(" + o.Present + ")"
	}
	present := make([]bool, len(objects))
	dest := make([]any, len(objects))
	for i := range present {
		dest[i] = &present[i]
	}
	return present, db.Raw("SELECT " + strings.Join(q, ", ")).Row().Scan(dest...)
}

// checkHandle checks the handle's settings once, before its first use: a
// handle the host opened without them is refused, never used silently
// (a session delete would leave rows behind, a busy database would fail
// writes at once). An error that is not about the settings (the database
// is down) is returned and the check is tried again next time.
func (s *Store) checkHandle(ctx context.Context) error {
	if s.checked.Load() {
		return nil
	}
	if err := s.d.CheckHandle(ctx, s.db); err != nil {
		if errors.Is(err, ErrHandleSettings) {
			return liberr.Errorf("%w", err)
		}
		return s.opError("check the handle's settings", err)
	}
	s.checked.Store(true)
	return nil
}

// ListBySession returns a session's rows in AC-13 order.
func (s *Store) ListBySession(ctx context.Context, taskSessionID string, page core.Page) ([]core.Subagent, error) {
	return s.list(ctx, "list by session", "task_session_id", taskSessionID, page)
}

// ListByTurn returns a turn's rows in AC-13 order.
func (s *Store) ListByTurn(ctx context.Context, turnID string, page core.Page) ([]core.Subagent, error) {
	return s.list(ctx, "list by turn", "turn_id", turnID, page)
}

func (s *Store) list(ctx context.Context, op, column, value string, page core.Page) ([]core.Subagent, error) {
	if err := page.Validate(); err != nil {
		return nil, &core.OpError{Op: op, Err: err}
	}
	q, qargs := s.listStatement(column, value, page)
	return s.rows(ctx, op, q, qargs)
}

// rows runs a statement selecting whole rows (columnList) and reads them.
func (s *Store) rows(ctx context.Context, op, q string, args []any) ([]core.Subagent, error) {
	rows, err := s.db.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, s.opError(op, err)
	}
	defer rows.Close()
	out := make([]core.Subagent, 0)
	dest := make([]any, len(columns))
	for rows.Next() {
		r, err := scanRow(rows, dest)
		if err != nil {
			return nil, s.opError(op, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.opError(op, err)
	}
	return out, nil
}

// scanRow reads rows' current row, its columns in storekit.Columns order,
// through dest (one element per column, reused from row to row).
func scanRow(rows *sql.Rows, dest []any) (core.Subagent, error) {
	var r core.Subagent
	for i, c := range columns {
		dest[i] = c.Dest(&r)
	}
	err := rows.Scan(dest...)
	return storekit.Canonical(r), err
}

// listStatement is the list query: one session's or one turn's rows in
// AC-13 order (observed_at, tool_call_id, agent_execution_id, text compared
// byte by byte; never id), after page.After, at most page.Limit of them.
func (s *Store) listStatement(column, value string, page core.Page) (string, []any) {
	d := s.d
	order := []string{d.Instant("observed_at"), d.Bytewise("tool_call_id"), d.Bytewise("agent_execution_id")}
	q := "SELECT " + columnList("") + " FROM " + Table + " WHERE " + column + " = ?"
	args := []any{value}
	if a := page.After; a != nil {
		c := a.Canonical()
		at, tool, exec := order[0], order[1], order[2]
		q += " AND (" + at + " > ? OR (" + at + " = ? AND (" + tool + " > ? OR (" + tool + " = ? AND " + exec + " > ?))))"
		us := c.ObservedAt.UnixMicro()
		args = append(args, us, us, c.ToolCallID, c.ToolCallID, c.AgentExecutionID)
	}
	q += " ORDER BY " + strings.Join(order, ", ")
	if page.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, page.Limit)
	}
	return q, args
}

// columnList is storekit.Columns' names, comma-separated, each prefixed.
func columnList(prefix string) string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = prefix + c.Name
	}
	return strings.Join(names, ", ")
}

// opError is a failed operation's error, classified by the dialect.
func (s *Store) opError(op string, err error) error { return s.keyError(op, core.RowKey{}, err) }

// keyError is opError for a write of one row's key. A write past its
// deadline is the database's passing state (docs/CONTRACT.md §6.1); a
// cancelled one is the caller's choice, no kind.
func (s *Store) keyError(op string, key core.RowKey, err error) error {
	kind := s.d.Classify(err)
	switch {
	case errors.Is(err, errAbsorbing) && !errors.Is(err, context.Canceled):
		kind = core.ErrUnavailable // no frame's fault
	case errors.Is(kind, core.ErrConstraint):
		// The frame's own cause first, whatever came with it (a rollback's
		// connection error): a retry would be refused again.
	case errors.Is(err, context.DeadlineExceeded):
		kind = core.ErrUnavailable
	case errors.Is(err, context.Canceled):
		kind = nil
	}
	return &core.OpError{Op: op, Key: key, Kind: kind, Err: err}
}
