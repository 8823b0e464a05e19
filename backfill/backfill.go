// Package backfill is the migration pass that runs at every boot (SPEC §4):
// create the table, check its shape and upgrade a legacy one, publish
// subagent_context_execution_since, and run the one-time backfill from the
// host's message history atomically with its two activation keys. A pass
// never aborts the host's boot: a failed step is logged at WARN with its
// name, writes nothing that claims success, and is retried by the next pass.
package backfill

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
)

// Target is a SQL store to migrate: *sqlite.Store and *postgres.Store.
type Target interface {
	DB() *gorm.DB
	Dialect() sqlstore.Dialect
	Tables() core.HostTables
}

// Migrator runs migration passes over one store.
type Migrator struct {
	db     *gorm.DB
	d      sqlstore.Dialect
	tables core.HostTables
	log    *slog.Logger
	now    func() time.Time
	hook   func(stage string) error
}

// Option configures a Migrator.
type Option func(*Migrator)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(m *Migrator) { m.log = l } }

// WithClock sets the clock for the keys' instants (default time.Now).
func WithClock(now func() time.Time) Option { return func(m *Migrator) { m.now = now } }

// New returns a Migrator for target.
func New(target Target, opts ...Option) (*Migrator, error) {
	if target == nil {
		return nil, errors.New("subagentctx: backfill: target is nil")
	}
	m := &Migrator{db: target.DB(), d: target.Dialect(), tables: target.Tables().WithDefaults(),
		log: slog.Default(), now: time.Now, hook: func(string) error { return nil }}
	for _, o := range opts {
		o(m)
	}
	return m, nil
}

// Run runs a whole pass in the SPEC's order: Prepare, then Backfill.
func (m *Migrator) Run(ctx context.Context) Report {
	r := m.Prepare(ctx)
	r.Steps = append(r.Steps, m.Backfill(ctx))
	return r
}

// Prepare runs the steps the live path needs before its first write: the
// table, its shape (upgrading a legacy one) and the execution key. It is
// quick; Backfill, which scans the message history, can follow later.
func (m *Migrator) Prepare(ctx context.Context) Report {
	var r Report
	r.Steps = append(r.Steps, m.step(ctx, StepTable, m.createTable))
	r.Steps = append(r.Steps, m.step(ctx, StepShape, m.checkShape))
	r.Steps = append(r.Steps, m.step(ctx, StepExecutionKey, m.writeExecutionKey))
	return r
}

// Backfill runs the backfill step alone (it checks the shape itself).
func (m *Migrator) Backfill(ctx context.Context) StepResult {
	return m.step(ctx, StepBackfill, m.backfill)
}

// step runs one step, timing it and logging a failure at WARN with its name.
func (m *Migrator) step(ctx context.Context, name string, fn func(context.Context, *StepResult) error) StepResult {
	res := StepResult{Step: name, Status: Ran}
	start := time.Now()
	err := fn(ctx, &res)
	res.Duration = time.Since(start)
	if err != nil {
		res.Status, res.Err, res.Detail = Failed, err, err.Error()
		res.RowsInserted, res.KeysWritten = 0, nil // nothing that claims success
		m.log.LogAttrs(ctx, slog.LevelWarn, "subagentctx: migration step failed; it will be retried on the next pass",
			slog.String("step", name), slog.Any("error", err))
		return res
	}
	m.log.LogAttrs(ctx, slog.LevelInfo, "subagentctx: migration step "+string(res.Status),
		slog.String("step", name), slog.String("detail", res.Detail),
		slog.Int64("rows_inserted", res.RowsInserted), slog.Any("keys_written", res.KeysWritten))
	return res
}

// createTable is step 1: the table and indexes if absent (AC-17); a second
// pass is a no-op (AC-18).
func (m *Migrator) createTable(ctx context.Context, res *StepResult) error {
	for _, stmt := range sqlstore.SchemaStatements(m.d, m.tables) {
		if err := m.db.WithContext(ctx).Exec(stmt).Error; err != nil {
			return fmt.Errorf("create: %w", err)
		}
	}
	res.Detail = "table, indexes and meta table present"
	return nil
}

// checkShape is step 2: a table not in its end shape (the legacy
// two-column key, say) is upgraded in one transaction (AC-33, 33a).
func (m *Migrator) checkShape(ctx context.Context, res *StepResult) error {
	shape, err := m.d.Shape(ctx, m.db)
	if err != nil {
		return fmt.Errorf("read shape: %w", err)
	}
	if !shape.Exists {
		return errors.New("table task_session_subagents does not exist")
	}
	if shape.EndState() {
		res.Status, res.Detail = Skipped, "end shape holds"
		return nil
	}
	var rows int64
	m.db.WithContext(ctx).Raw(`SELECT count(*) FROM ` + core.Table).Scan(&rows)
	if err := m.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return m.d.Upgrade(ctx, tx, m.tables, m.hook)
	}); err != nil {
		return fmt.Errorf("upgrade to the three-column key (the old shape is kept): %w", err)
	}
	if shape, err = m.d.Shape(ctx, m.db); err != nil || !shape.EndState() {
		return fmt.Errorf("upgrade committed but the end shape does not hold (%+v): %v", shape, err)
	}
	res.Detail = fmt.Sprintf("upgraded to the three-column key; %d rows kept with agent_execution_id 'unknown'", rows)
	return nil
}

// writeExecutionKey is step 3 (AC-33b): when the end shape holds, however it
// came about, write execution_since if absent.
func (m *Migrator) writeExecutionKey(ctx context.Context, res *StepResult) error {
	if ok, why, err := m.endState(ctx); err != nil || !ok {
		res.Status, res.Detail = Skipped, why
		return err
	}
	wrote, err := m.writeKey(m.db.WithContext(ctx), core.KeyExecutionSince, formatKey(m.now()))
	if err != nil {
		return err
	}
	if wrote {
		res.KeysWritten = []string{core.KeyExecutionSince}
		res.Detail = "written"
	} else {
		res.Status, res.Detail = Skipped, "already present"
	}
	return nil
}

func (m *Migrator) endState(ctx context.Context) (bool, string, error) {
	shape, err := m.d.Shape(ctx, m.db)
	if err != nil {
		return false, "cannot read the table's shape", fmt.Errorf("read shape: %w", err)
	}
	if !shape.EndState() {
		return false, "the table is not in its end shape yet", nil
	}
	return true, "", nil
}

// formatKey is the form of every key this project writes: RFC3339Nano, UTC,
// at the microsecond precision of the stored timestamps.
func formatKey(t time.Time) string { return core.CanonicalTime(t).Format(time.RFC3339Nano) }

// writeKey inserts a key unless present (write-once, whatever the present
// value's precision or form). It reports whether it wrote.
func (m *Migrator) writeKey(db *gorm.DB, key, value string) (bool, error) {
	res := db.Exec(`INSERT INTO `+core.QuoteIdentifier(m.tables.Meta)+` ("key", value) VALUES (?, ?) ON CONFLICT ("key") DO NOTHING`, key, value)
	if res.Error != nil {
		return false, fmt.Errorf("write %s: %w", key, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// readKeys returns the keys present in the meta table.
func (m *Migrator) readKeys(ctx context.Context, keys ...string) (map[string]string, error) {
	var kv []struct{ Key, Value string }
	err := m.db.WithContext(ctx).Raw(`SELECT "key", value FROM `+core.QuoteIdentifier(m.tables.Meta)+` WHERE "key" IN ?`, keys).Scan(&kv).Error
	out := make(map[string]string, len(kv))
	for _, e := range kv {
		out[e.Key] = e.Value
	}
	return out, err
}

// backfill is step 4 (AC-21 … AC-24f): one INSERT … SELECT over the
// messages, with both activation keys, in one transaction.
func (m *Migrator) backfill(ctx context.Context, res *StepResult) error {
	if ok, why, err := m.endState(ctx); err != nil || !ok {
		res.Status, res.Detail = Skipped, why+": the backfill waits for it and writes no key"
		return err
	}
	present, err := m.readKeys(ctx, core.KeyBackfillThrough, core.KeyCaptureSince)
	if err != nil {
		return fmt.Errorf("read activation keys: %w", err)
	}
	// The guard is "both keys present", so a partial pair left by an older
	// build is completed (AC-24).
	if len(present) == 2 {
		res.Status, res.Detail = Skipped, "already activated (both keys present)"
		return nil
	}
	if ok, err := m.d.TableExists(ctx, m.db, m.tables.Messages); err != nil || !ok {
		return errors.Join(fmt.Errorf("messages table %q does not exist", m.tables.Messages), err)
	}
	q, err := m.queries(ctx)
	if err != nil {
		return err
	}
	err = m.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		through, inserted, err := m.scanAndInsert(tx, q)
		if err != nil {
			return err
		}
		res.RowsInserted = inserted
		if err := m.hook("inserted"); err != nil {
			return err
		}
		// capture_since: after the insert, inside the transaction, before
		// the key writes (never at transaction start).
		capture := formatKey(m.now())
		throughValue := core.BackfillNothing
		if through.Valid {
			throughValue = formatKey(time.UnixMicro(through.Int64))
		}
		for _, kv := range [][2]string{{core.KeyBackfillThrough, throughValue}, {core.KeyCaptureSince, capture}} {
			wrote, err := m.writeKey(tx, kv[0], kv[1])
			if err != nil {
				return err
			}
			if wrote {
				res.KeysWritten = append(res.KeysWritten, kv[0])
			}
			if err := m.hook("wrote " + kv[0]); err != nil {
				return err
			}
		}
		return m.hook("before commit")
	})
	if err != nil {
		return err
	}
	res.Detail = fmt.Sprintf("%d rows inserted from %s", res.RowsInserted, m.tables.Messages)
	return nil
}

// scanAndInsert is the backfill proper: one scan of the messages (AC-23a),
// backfill_through from every matching message (the predicate, not the rows
// this attempt inserts) taken before or with the insert, never after it
// (AC-24: after could over-claim), and the INSERT … SELECT … ON CONFLICT DO
// NOTHING (AC-22).
func (m *Migrator) scanAndInsert(tx *gorm.DB, q queries) (sql.NullInt64, int64, error) {
	now := core.CanonicalTime(m.now())
	if q.single != "" {
		// One statement: the scan, backfill_through and the insert share
		// one snapshot.
		var out struct {
			Through  sql.NullInt64
			Inserted int64
		}
		if err := tx.Raw(q.single, now).Scan(&out).Error; err != nil {
			return out.Through, 0, fmt.Errorf("backfill from %s: %w", m.tables.Messages, err)
		}
		return out.Through, out.Inserted, nil
	}
	// The matching messages, staged in a temporary table by one scan; the
	// key and the insert read the staged rows. The writer's lock, held since
	// the transaction began, keeps the messages unchanged meanwhile.
	var through sql.NullInt64
	for _, stmt := range []string{q.dropStage, q.stage} {
		if err := tx.Exec(stmt).Error; err != nil {
			return through, 0, fmt.Errorf("scan %s: %w", m.tables.Messages, err)
		}
	}
	if err := tx.Raw(q.through).Scan(&through).Error; err != nil {
		return through, 0, fmt.Errorf("compute backfill_through: %w", err)
	}
	ins := tx.Exec(q.insert, now)
	if ins.Error != nil {
		return through, 0, fmt.Errorf("insert from %s: %w", m.tables.Messages, ins.Error)
	}
	return through, ins.RowsAffected, tx.Exec(q.dropStage).Error
}

// queries are the backfill's statements: single where the dialect can
// insert from a WITH clause (PostgreSQL), else the staged sequence
// (SQLite).
type queries struct{ single, dropStage, stage, through, insert string }

// subagentMessages selects the messages whose metadata is a subagent task,
// with the parsed document. Both subqueries are fenced, so the document is
// parsed once per message and everything else (time arithmetic, column
// extraction) runs on the matching 1% only: without the fences both
// databases evaluated the created_at arithmetic for every message, which
// doubled the scan.
func subagentMessages(d sqlstore.Dialect, messages string) string {
	return `SELECT c.* FROM (SELECT id, task_session_id, task_id, turn_id, created_at, updated_at, ` + d.MessageDocument("metadata") + ` AS doc
		FROM ` + core.QuoteIdentifier(messages) + ` ` + d.Fence() + `) c
		WHERE ` + d.JSONText("c.doc", "normalized", "kind") + ` = 'subagent_task' ` + d.Fence()
}

// stageTable holds, for one backfill transaction, the messages that match
// the predicate: 1% of the rows on the reference store.
const stageTable = "subagentctx_backfill_stage"

// queries builds the backfill's statements over one scan of the matching
// messages (every message's metadata read as a JSON object, {} when
// malformed, AC-23b; the subagent messages with all three identities,
// AC-21a and AC-2; ranked newest first per (session, tool_call_id), AC-21b).
// The first design scanned the messages twice (once for backfill_through,
// once for the insert) and measured 3.8-5× a bare scan.
func (m *Migrator) queries(ctx context.Context) (queries, error) {
	host := func(col string) (func(string) string, error) {
		f, err := m.d.HostTime(ctx, m.db, m.tables.Messages, col)
		if err != nil {
			return nil, fmt.Errorf("messages table: %w", err)
		}
		return f, nil
	}
	created, err := host("created_at")
	if err != nil {
		return queries{}, err
	}
	updated, err := host("updated_at")
	if err != nil {
		return queries{}, err
	}
	d := m.d
	const doc = "d.doc"
	task := func(key string) []string { return []string{"normalized", "subagent_task", key} }
	extracted := `SELECT d.id AS message_id, d.task_session_id, d.task_id, NULLIF(d.turn_id, '') AS turn_id,
		` + d.JSONText(doc, "tool_call_id") + ` AS tool_call_id,
		` + d.JSONText(doc, "parent_tool_call_id") + ` AS parent_tool_call_id,
		` + d.JSONText(doc, "status") + ` AS tool_status,
		` + d.JSONText(doc, task("status")...) + ` AS agent_status,
		` + d.JSONText(doc, task("subagent_type")...) + ` AS subagent_type,
		` + d.JSONText(doc, task("description")...) + ` AS description,
		` + d.JSONText(doc, task("agent_id")...) + ` AS agent_id,
		` + d.JSONText(doc, task("child_session_id")...) + ` AS child_session_id,
		` + d.JSONText(doc, task("model")...) + ` AS model,
		` + d.JSONBool(doc, task("is_async")...) + ` AS is_async,
		` + d.JSONInt(doc, 1, task("total_tokens")...) + ` AS total_tokens,
		` + d.JSONInt(doc, 0, task("tool_use_count")...) + ` AS tool_use_count,
		` + d.JSONInt(doc, 1, task("duration_ms")...) + ` AS duration_ms,
		` + d.Instant("d.created_at") + ` AS created_us,
		` + created("d.created_at") + ` AS observed_at,
		` + updated("d.updated_at") + ` AS message_updated_at
		FROM (` + subagentMessages(d, m.tables.Messages) + `) d`
	predicate := `s.task_session_id <> '' AND s.task_id <> '' AND s.tool_call_id IS NOT NULL
		AND s.created_us IS NOT NULL
		AND EXISTS (SELECT 1 FROM ` + core.QuoteIdentifier(m.tables.Sessions) + ` x WHERE x.id = s.task_session_id)`
	ranked := `SELECT s.*, ROW_NUMBER() OVER (PARTITION BY s.task_session_id, s.tool_call_id ORDER BY s.created_us DESC, s.message_id DESC) AS rn
	FROM (` + extracted + `) s WHERE ` + predicate
	terminal := make([]string, len(core.TerminalToolStatuses))
	for i, st := range core.TerminalToolStatuses {
		terminal[i] = "'" + st + "'"
	}
	insert := `INSERT INTO ` + core.Table + ` (id, task_session_id, task_id, turn_id, agent_execution_id, tool_call_id,
		parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status,
		is_async, total_tokens, tool_use_count, duration_ms, source, observed_at, settled_at, updated_at)
	SELECT r.message_id, r.task_session_id, r.task_id, r.turn_id, '` + core.UnknownExecution + `', r.tool_call_id,
		r.parent_tool_call_id, r.subagent_type, r.description, r.agent_id, r.child_session_id, r.model, r.agent_status, r.tool_status,
		r.is_async, r.total_tokens, r.tool_use_count, r.duration_ms, '` + string(core.SourceBackfill) + `', r.observed_at,
		CASE WHEN r.tool_status IN (` + strings.Join(terminal, ", ") + `) THEN r.message_updated_at END, ?
	FROM %s r
	WHERE r.rn = 1
	ON CONFLICT (task_session_id, agent_execution_id, tool_call_id) DO NOTHING`
	if d.WritableCTE() {
		return queries{single: `WITH staged AS MATERIALIZED (` + ranked + `),
			inserted AS (` + fmt.Sprintf(insert, "staged") + ` RETURNING 1)
			SELECT (SELECT MAX(created_us) FROM staged) AS through, (SELECT count(*) FROM inserted) AS inserted`}, nil
	}
	return queries{dropStage: `DROP TABLE IF EXISTS ` + stageTable, stage: `CREATE TEMP TABLE ` + stageTable + ` AS ` + ranked,
		through: `SELECT MAX(created_us) FROM ` + stageTable, insert: fmt.Sprintf(insert, stageTable)}, nil
}
