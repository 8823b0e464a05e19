package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subagentctx/subagentctx/core"
)

// Store is a core.Store over a *gorm.DB.
type Store struct {
	db     *gorm.DB
	d      Dialect
	tables core.HostTables
	now    func() time.Time
	upsert atomic.Pointer[sql.Stmt] // prepared on first use
	mu     sync.Mutex               // serialises preparing it
	owned  func() error             // closes connections the store opened; nil for a host's handle
	// upsertSQL is UpsertStatement's text, built once.
	upsertSQL func() (string, error)
}

var _ core.Store = (*Store)(nil)

// ErrNoSessionsTable is returned by Open when the host's sessions table,
// which task_session_subagents references, does not exist.
var ErrNoSessionsTable = errors.New("host sessions table does not exist")

// Open validates the host table names (before any SQL runs), checks that the
// host's sessions table exists, and creates task_session_subagents, its
// indexes and the meta table if absent. Opening twice is a no-op.
func Open(ctx context.Context, db *gorm.DB, d Dialect, tables core.HostTables) (*Store, error) {
	s, err := New(db, d, tables)
	if err != nil {
		return nil, err
	}
	if err := s.ensureSchema(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenOwned is Open on a handle the store owns: Close closes its
// connections, and so does a failed open.
func OpenOwned(ctx context.Context, db *gorm.DB, d Dialect, tables core.HostTables) (*Store, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, db, d, tables)
	if err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	s.owned = sqlDB.Close
	return s, nil
}

// Close releases the prepared statement and, when the store opened its own
// connections (OpenOwned), closes them; a host's handle stays open.
func (s *Store) Close() error {
	err := s.CloseStatements()
	if s.owned != nil {
		err = errors.Join(err, s.owned())
	}
	return err
}

// New validates the host table names and returns the store without
// touching the database: the schema is the migration pass's first step
// (backfill.Migrator), for a host that must not fail to start when the
// database is down.
func New(db *gorm.DB, d Dialect, tables core.HostTables) (*Store, error) {
	if db == nil {
		return nil, errors.New("subagentctx: open store: *gorm.DB is nil")
	}
	if err := tables.Validate(); err != nil {
		return nil, fmt.Errorf("subagentctx: open store: %w", err)
	}
	s := &Store{db: db, d: d, tables: tables.WithDefaults(), now: time.Now}
	s.upsertSQL = sync.OnceValues(func() (string, error) {
		q, _, err := s.UpsertStatement(core.Subagent{})
		return q, err
	})
	return s, nil
}

// DB is the underlying handle.
func (s *Store) DB() *gorm.DB { return s.db }

// Dialect is the store's dialect.
func (s *Store) Dialect() Dialect { return s.d }

// Tables are the host table names in use (defaults filled in).
func (s *Store) Tables() core.HostTables { return s.tables }

func (s *Store) ensureSchema(ctx context.Context) error {
	ok, err := s.d.TableExists(ctx, s.db, s.tables.Sessions)
	if err != nil {
		return s.opError("check sessions table", core.Key{}, err)
	}
	if !ok {
		return fmt.Errorf("subagentctx: open store: %w: %q (task_session_subagents references it; set HostTables.Sessions if the host names it differently)",
			ErrNoSessionsTable, s.tables.Sessions)
	}
	for _, stmt := range SchemaStatements(s.d, s.tables) {
		if err := s.db.WithContext(ctx).Exec(stmt).Error; err != nil {
			return s.opError("create schema", core.Key{}, fmt.Errorf("%w\n  in: %s", err, stmt))
		}
	}
	return nil
}

// model is the GORM mapping of one row. Timestamps are bound as UTC
// time.Time; is_async as 0/1, its column type on both dialects.
type model struct {
	ID               string     `gorm:"column:id;primaryKey"`
	TaskSessionID    string     `gorm:"column:task_session_id"`
	TaskID           string     `gorm:"column:task_id"`
	TurnID           *string    `gorm:"column:turn_id"`
	AgentExecutionID string     `gorm:"column:agent_execution_id"`
	ToolCallID       string     `gorm:"column:tool_call_id"`
	ParentToolCallID *string    `gorm:"column:parent_tool_call_id"`
	SubagentType     *string    `gorm:"column:subagent_type"`
	Description      *string    `gorm:"column:description"`
	AgentID          *string    `gorm:"column:agent_id"`
	ChildSessionID   *string    `gorm:"column:child_session_id"`
	Model            *string    `gorm:"column:model"`
	AgentStatus      *string    `gorm:"column:agent_status"`
	ToolStatus       *string    `gorm:"column:tool_status"`
	IsAsync          int        `gorm:"column:is_async"`
	TotalTokens      *int64     `gorm:"column:total_tokens"`
	ToolUseCount     *int64     `gorm:"column:tool_use_count"`
	DurationMs       *int64     `gorm:"column:duration_ms"`
	Source           string     `gorm:"column:source"`
	ObservedAt       time.Time  `gorm:"column:observed_at"`
	SettledAt        *time.Time `gorm:"column:settled_at"`
	UpdatedAt        time.Time  `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (model) TableName() string { return core.Table }

func toModel(r core.Subagent) model {
	m := model{ID: r.ID, TaskSessionID: r.TaskSessionID, TaskID: r.TaskID, TurnID: r.TurnID,
		AgentExecutionID: r.AgentExecutionID, ToolCallID: r.ToolCallID, ParentToolCallID: r.ParentToolCallID,
		SubagentType: r.SubagentType, Description: r.Description, AgentID: r.AgentID, ChildSessionID: r.ChildSessionID,
		Model: r.Model, AgentStatus: r.AgentStatus, ToolStatus: r.ToolStatus, TotalTokens: r.TotalTokens,
		ToolUseCount: r.ToolUseCount, DurationMs: r.DurationMs, Source: string(r.Source),
		ObservedAt: core.CanonicalTime(r.ObservedAt), UpdatedAt: core.CanonicalTime(r.UpdatedAt)}
	if r.IsAsync {
		m.IsAsync = 1
	}
	if r.SettledAt != nil {
		t := core.CanonicalTime(*r.SettledAt)
		m.SettledAt = &t
	}
	return m
}

func (m *model) row() core.Subagent {
	r := core.Subagent{ID: m.ID, TaskSessionID: m.TaskSessionID, TaskID: m.TaskID, TurnID: m.TurnID,
		AgentExecutionID: m.AgentExecutionID, ToolCallID: m.ToolCallID, ParentToolCallID: m.ParentToolCallID,
		SubagentType: m.SubagentType, Description: m.Description, AgentID: m.AgentID, ChildSessionID: m.ChildSessionID,
		Model: m.Model, AgentStatus: m.AgentStatus, ToolStatus: m.ToolStatus, IsAsync: m.IsAsync != 0,
		TotalTokens: m.TotalTokens, ToolUseCount: m.ToolUseCount, DurationMs: m.DurationMs, Source: core.Source(m.Source),
		ObservedAt: m.ObservedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
	if m.SettledAt != nil {
		t := m.SettledAt.UTC()
		r.SettledAt = &t
	}
	return r
}

// mergeOnConflict is core.Merge written as the DO UPDATE of one INSERT … ON
// CONFLICT (task_session_id, agent_execution_id, tool_call_id) (AC-14: no
// read-then-write). Stored-row references are qualified with the table
// (clause.CurrentTable): PostgreSQL rejects an unqualified column there as
// ambiguous, SQLite would silently accept it. In an UPDATE's SET list every
// reference reads the row as it was before this statement, on both dialects.
// Columns absent from the list are write-once (AC-1a): id, task_id, source,
// observed_at, and the key itself.
var mergeOnConflict = func() clause.OnConflict {
	stored := func(c string) clause.Column { return clause.Column{Table: clause.CurrentTable, Name: c} }
	set := func(c, sql string, vars ...any) clause.Assignment {
		return clause.Assignment{Column: clause.Column{Name: c}, Value: clause.Expr{SQL: sql, Vars: vars}}
	}
	// AC-4/AC-5: a non-NULL incoming value replaces, a NULL one never blanks.
	// Normalize has turned '', 0 tokens/duration and negatives into NULL.
	fillForward := func(c string) clause.Assignment {
		return set(c, "COALESCE(excluded."+c+", ?)", stored(c))
	}
	return clause.OnConflict{
		Columns: []clause.Column{{Name: "task_session_id"}, {Name: "agent_execution_id"}, {Name: "tool_call_id"}},
		DoUpdates: clause.Set{
			// AC-2a: the first non-empty turn wins; a NULL turn is filled.
			set("turn_id", "COALESCE(?, excluded.turn_id)", stored("turn_id")),
			fillForward("parent_tool_call_id"),
			fillForward("subagent_type"),
			fillForward("description"),
			fillForward("agent_id"),
			fillForward("child_session_id"),
			fillForward("model"),
			fillForward("agent_status"), // AC-10a: verbatim, settles nothing
			fillForward("total_tokens"),
			fillForward("tool_use_count"),
			fillForward("duration_ms"),
			// AC-11/AC-12: once settled, tool_status and settled_at are frozen.
			set("tool_status", "CASE WHEN ? IS NOT NULL THEN ? ELSE COALESCE(excluded.tool_status, ?) END",
				stored("settled_at"), stored("tool_status"), stored("tool_status")),
			set("settled_at", "COALESCE(?, excluded.settled_at)", stored("settled_at")),
			// is_async is sticky: once 1, never back to 0.
			set("is_async", "CASE WHEN ? = 1 OR excluded.is_async = 1 THEN 1 ELSE 0 END", stored("is_async")),
			set("updated_at", "excluded.updated_at"),
		},
	}
}()

// Upsert writes one row in one atomic statement. The statement is the one
// GORM builds from mergeOnConflict (UpsertStatement), prepared once and then
// executed with bound arguments: the hot path does no statement building or
// reflection per frame.
func (s *Store) Upsert(ctx context.Context, row core.Subagent) error {
	if err := row.Validate(); err != nil {
		return &core.OpError{Op: "upsert", Key: row.Key(), Err: err}
	}
	if row.ID == "" {
		row.ID = uuid.NewString()
	}
	row.UpdatedAt = s.now()
	var err error
	if sqlDB, ok := s.db.Statement.ConnPool.(*sql.DB); ok {
		var stmt *sql.Stmt
		if stmt, err = s.upsertStmt(ctx, sqlDB); err == nil {
			_, err = stmt.ExecContext(ctx, UpsertArgs(row)...)
		}
	} else {
		// Not a plain *sql.DB (a host's transaction, or GORM's own prepared
		// statement pool): the same statement, through GORM, on that handle.
		var q string
		if q, err = s.upsertSQL(); err == nil {
			err = s.db.WithContext(ctx).Exec(q, UpsertArgs(row)...).Error
		}
	}
	if err != nil {
		return s.opError("upsert", row.Key(), err)
	}
	return nil
}

// upsertStmt prepares the upsert on first use (not at construction, so a
// store can be built while the database is down). A failed prepare is not
// kept: the next write tries again.
func (s *Store) upsertStmt(ctx context.Context, sqlDB *sql.DB) (*sql.Stmt, error) {
	if stmt := s.upsert.Load(); stmt != nil {
		return stmt, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if stmt := s.upsert.Load(); stmt != nil {
		return stmt, nil
	}
	q, err := s.upsertSQL()
	if err != nil {
		return nil, err
	}
	stmt, err := sqlDB.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.upsert.Store(stmt)
	return stmt, nil
}

// CloseStatements releases the prepared statement (the connections stay
// open).
func (s *Store) CloseStatements() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stmt := s.upsert.Swap(nil); stmt != nil {
		return stmt.Close()
	}
	return nil
}

const columns = `id, task_session_id, task_id, turn_id, agent_execution_id, tool_call_id, parent_tool_call_id,
	subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async,
	total_tokens, tool_use_count, duration_ms, source, observed_at, settled_at, updated_at`

// ListBySession returns a session's rows in AC-13 order.
func (s *Store) ListBySession(ctx context.Context, taskSessionID string, page core.Page) ([]core.Subagent, error) {
	return s.list(ctx, "list by session", "task_session_id", taskSessionID, page)
}

// ListByTurn returns a turn's rows in AC-13 order.
func (s *Store) ListByTurn(ctx context.Context, turnID string, page core.Page) ([]core.Subagent, error) {
	return s.list(ctx, "list by turn", "turn_id", turnID, page)
}

// list reads in AC-13 order (observed_at, tool_call_id, agent_execution_id;
// never id), with keyset paging on the same triple.
func (s *Store) list(ctx context.Context, op, column, value string, page core.Page) ([]core.Subagent, error) {
	if err := page.Validate(); err != nil {
		return nil, &core.OpError{Op: op, Err: err}
	}
	observed := s.d.Instant("observed_at")
	q := "SELECT " + columns + " FROM " + core.Table + " WHERE " + column + " = ?"
	args := []any{value}
	if a := page.After; a != nil {
		q += " AND (" + observed + ", tool_call_id, agent_execution_id) > (?, ?, ?)"
		args = append(args, a.ObservedAt.UnixMicro(), a.ToolCallID, a.AgentExecutionID)
	}
	q += " ORDER BY " + observed + ", tool_call_id, agent_execution_id"
	if page.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, page.Limit)
	}
	var ms []model
	if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&ms).Error; err != nil {
		return nil, s.opError(op, core.Key{}, err)
	}
	out := make([]core.Subagent, len(ms))
	for i := range ms {
		out[i] = ms[i].row()
	}
	return out, nil
}

func (s *Store) opError(op string, key core.Key, err error) error {
	var kind error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	default:
		kind = s.d.Classify(err)
	}
	return &core.OpError{Op: op, Key: key, Kind: kind, Err: err}
}

// UpsertStatement is the upsert exactly as GORM builds it from
// mergeOnConflict for row (a dry run: nothing is executed), with its
// arguments.
func (s *Store) UpsertStatement(row core.Subagent) (string, []any, error) {
	m := toModel(row)
	stmt := s.db.Session(&gorm.Session{DryRun: true, NewDB: true}).Clauses(mergeOnConflict).Create(&m).Statement
	if stmt.Error != nil {
		return "", nil, stmt.Error
	}
	return stmt.SQL.String(), stmt.Vars, nil
}

// UpsertArgs are UpsertStatement's arguments for a row, in its column order.
func UpsertArgs(row core.Subagent) []any {
	m := toModel(row)
	return []any{m.ID, m.TaskSessionID, m.TaskID, m.TurnID, m.AgentExecutionID, m.ToolCallID, m.ParentToolCallID,
		m.SubagentType, m.Description, m.AgentID, m.ChildSessionID, m.Model, m.AgentStatus, m.ToolStatus, m.IsAsync,
		m.TotalTokens, m.ToolUseCount, m.DurationMs, m.Source, m.ObservedAt, m.SettledAt, m.UpdatedAt}
}
