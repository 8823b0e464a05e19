// Package backfill is the migration pass that runs at every boot
// (docs/CONTRACT.md §4): create the table, check its shape and upgrade an
// older one, publish subagent_context_execution_since, and recover the
// history from the host's messages atomically with the two activation keys.
// A pass never aborts the host's boot: a failed step is reported and logged
// at WARN with its name, and writes nothing that claims success.
//
// Recover is the pass's reference semantics for one message, in Go; Pass,
// for a whole history. Both SQL dialects must produce exactly what they
// produce (a differential fuzz test checks).
package backfill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
)

// Migrator runs migration passes over one store.
type Migrator struct {
	store *sqlstore.Store
	log   *slog.Logger
	now   func() time.Time
	hook  func(stage string) error
}

// Option configures a Migrator.
type Option func(*Migrator)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(m *Migrator) { m.log = l } }

// WithClock sets the clock for the keys' instants and the backfilled rows'
// updated_at (default time.Now).
func WithClock(now func() time.Time) Option { return func(m *Migrator) { m.now = now } }

// WithHook sets a function called between the statements of the shape
// upgrade and of the backfill transaction, with the stage's name; an error
// it returns aborts the transaction there. It exists for fault-injection
// tests (the upgrade's stages are Dialect.UpgradeStages; the backfill's
// "inserted", "wrote <key>" and "before commit").
func WithHook(h func(stage string) error) Option { return func(m *Migrator) { m.hook = h } }

// New returns a Migrator for store. A nil store makes every step fail,
// saying so.
func New(store *sqlstore.Store, opts ...Option) *Migrator {
	m := &Migrator{store: store, log: slog.Default(), now: time.Now, hook: func(string) error { return nil }}
	for _, o := range opts {
		o(m)
	}
	return m
}

// errNoStore is every step's failure on a Migrator without a store.
var errNoStore = errors.New("subagentctx: backfill: the store is nil")

// Run runs a whole pass in the contract's order: Prepare, then Backfill.
func (m *Migrator) Run(ctx context.Context) Report {
	r := m.Prepare(ctx)
	r.Steps = append(r.Steps, m.Backfill(ctx))
	return r
}

// Prepare runs the steps the live path needs before its first write: the
// table, its shape (upgrading an older one) and the execution key. Backfill,
// which scans the message history, can follow later.
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

// step runs one step, timing it. A failure is logged at WARN with the
// step's name; a step stopped by its context's cancellation is reported
// as cancelled, at INFO: a host shutting down is not a failure.
func (m *Migrator) step(ctx context.Context, name string, fn func(context.Context, *StepResult) error) StepResult {
	res := StepResult{Step: name, Status: Ran}
	start := time.Now()
	err := errNoStore
	if m.store != nil {
		err = fn(ctx, &res)
	}
	res.Duration = time.Since(start)
	switch {
	case err != nil && ctx.Err() != nil:
		res.Status, res.Err, res.Detail = Cancelled, err, "cancelled: "+context.Cause(ctx).Error()
		res.RowsInserted, res.KeysWritten = 0, nil
		m.log.LogAttrs(ctx, slog.LevelInfo, "subagentctx: migration step cancelled", slog.String("step", name))
	case err != nil:
		res.Status, res.Err, res.Detail = Failed, err, err.Error()
		res.RowsInserted, res.KeysWritten = 0, nil // nothing that claims success
		m.log.LogAttrs(ctx, slog.LevelWarn, "subagentctx: migration step failed", slog.String("step", name), slog.Any("error", err))
	default:
		m.log.LogAttrs(ctx, slog.LevelInfo, "subagentctx: migration step "+string(res.Status),
			slog.String("step", name), slog.String("detail", res.Detail),
			slog.Int64("rows_inserted", res.RowsInserted), slog.Any("keys_written", res.KeysWritten))
	}
	return res
}

// createTable is step 1: the table and indexes if absent (AC-17); a second
// pass is a no-op (AC-18). Without the host's sessions table it fails:
// the library never creates the host's tables, nor its own beside them.
func (m *Migrator) createTable(ctx context.Context, res *StepResult) error {
	if err := m.store.EnsureSchema(ctx); err != nil {
		return err
	}
	res.Detail = "table, indexes and meta table present"
	return nil
}

// checkShape is step 2: a table not in its end shape is upgraded in one
// transaction, every row kept (AC-33, 33a).
func (m *Migrator) checkShape(ctx context.Context, res *StepResult) error {
	db, d := m.store.DB(), m.store.Dialect()
	shape, err := d.Shape(ctx, db)
	if err != nil {
		return fmt.Errorf("read shape: %w", err)
	}
	if !shape.Exists {
		return errors.New("table task_session_subagents does not exist")
	}
	if shape.EndState() {
		if err := d.Distribute(ctx, db, m.store.Tables(), false); err != nil {
			return err
		}
		res.Status, res.Detail = Skipped, "end shape holds"
		return nil
	}
	var rows int64
	if err := db.WithContext(ctx).Raw(`SELECT count(*) FROM ` + sqlstore.Table).Scan(&rows).Error; err != nil {
		return fmt.Errorf("count rows: %w", err)
	}
	if err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return d.Upgrade(ctx, tx, m.store.Tables(), m.hook)
	}); err != nil {
		return fmt.Errorf("upgrade to the end shape (the old shape is kept): %w", err)
	}
	if shape, err = d.Shape(ctx, db); err != nil || !shape.EndState() {
		return fmt.Errorf("upgrade committed but the end shape does not hold (%+v): %v", shape, err)
	}
	if err := d.Distribute(ctx, db, m.store.Tables(), false); err != nil {
		return err
	}
	res.Detail = fmt.Sprintf("upgraded to the end shape; %d rows kept (agent_execution_id 'unknown' where it was missing)", rows)
	return nil
}

// writeExecutionKey is step 3 (AC-33b): when the end shape holds, however
// it came about, write execution_since if absent.
func (m *Migrator) writeExecutionKey(ctx context.Context, res *StepResult) error {
	if _, why, err := m.endState(ctx); err != nil || why != "" {
		res.Status, res.Detail = Skipped, why
		return err
	}
	wrote, err := m.writeKey(m.store.DB().WithContext(ctx), core.ExecutionSinceKey, formatKey(core.CanonicalTime(m.now())))
	if err != nil {
		return err
	}
	if wrote {
		res.KeysWritten = []string{core.ExecutionSinceKey}
		res.Detail = "written"
	} else {
		res.Status, res.Detail = Skipped, "already present"
	}
	return nil
}

// endState reads the table's shape; why says what keeps it from its end
// shape ("" when it holds).
func (m *Migrator) endState(ctx context.Context) (sqlstore.Shape, string, error) {
	shape, err := m.store.Dialect().Shape(ctx, m.store.DB())
	if err != nil {
		return shape, "cannot read the table's shape", fmt.Errorf("read shape: %w", err)
	}
	if !shape.EndState() {
		return shape, "the table is not in its end shape yet", nil
	}
	return shape, "", nil
}

// formatKey is the form of every key this project writes: RFC 3339 with
// nanoseconds, UTC.
func formatKey(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// writeKey inserts a key unless present (write-once, whatever the present
// value's precision or form). It reports whether it wrote.
func (m *Migrator) writeKey(db *gorm.DB, key, value string) (bool, error) {
	res := db.Exec(`INSERT INTO "`+m.store.Tables().Meta+`" ("key", value) VALUES (?, ?) ON CONFLICT ("key") DO NOTHING`, key, value)
	if res.Error != nil {
		return false, fmt.Errorf("write %s: %w", key, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// backfill is step 4 (AC-21 … AC-24f): one INSERT … SELECT over the
// messages, with both activation keys, in one transaction.
func (m *Migrator) backfill(ctx context.Context, res *StepResult) error {
	shape, why, err := m.endState(ctx)
	if err != nil || why != "" {
		res.Status, res.Detail = Skipped, why+": the backfill waits for it and writes no key"
		return err
	}
	a, err := m.store.Activation(ctx)
	if err != nil {
		return fmt.Errorf("read activation keys: %w", err)
	}
	// The guard is "both keys present", so a partial pair left behind is
	// completed (AC-24).
	if a.BackfillThrough.Present && a.CaptureSince.Present {
		res.Status, res.Detail = Skipped, "already activated (both keys present)"
		return nil
	}
	db, d, tables := m.store.DB(), m.store.Dialect(), m.store.Tables()
	if ok, err := d.TableExists(ctx, db, tables.Messages); err != nil || !ok {
		return errors.Join(fmt.Errorf("messages table %q does not exist", tables.Messages), err)
	}
	err = d.WithConn(ctx, db, func(conn *gorm.DB) error {
		return conn.Transaction(func(tx *gorm.DB) error {
			through, inserted, err := m.scanAndInsert(tx, shape.Distributed)
			if err != nil {
				return err
			}
			res.RowsInserted = inserted
			if err := m.hook("inserted"); err != nil {
				return err
			}
			// capture_since: after the insert, inside the transaction,
			// before the key writes (never at transaction start).
			capture := formatKey(core.CanonicalTime(m.now()))
			throughValue := core.BackfillNothing
			if through != nil {
				throughValue = formatKey(*through)
			}
			for _, kv := range [][2]string{{core.BackfillThroughKey, throughValue}, {core.CaptureSinceKey, capture}} {
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
	})
	if err != nil {
		return err
	}
	res.Detail = fmt.Sprintf("%d rows inserted from %s", res.RowsInserted, tables.Messages)
	return nil
}

// scanAndInsert is the backfill proper: one scan of the messages (AC-23a;
// on a sharded table, one per statement, each on every shard at once),
// backfill_through from every recoverable message (not from the rows this
// attempt inserts) taken before or with the insert, never after it (AC-24:
// after could over-claim), and the INSERT … SELECT … ON CONFLICT DO NOTHING
// (AC-22).
func (m *Migrator) scanAndInsert(tx *gorm.DB, distributed bool) (*time.Time, int64, error) {
	st := m.store.Backfill(distributed)
	d := m.store.Dialect()
	updated := core.CanonicalTime(m.now())
	for _, stmt := range st.Plan {
		if err := tx.Exec(stmt).Error; err != nil {
			return nil, 0, fmt.Errorf("plan the backfill: %w", err)
		}
	}
	if st.Single != "" {
		// One statement: the scan, backfill_through and the insert share
		// one snapshot.
		out, err := sqlstore.Query(tx, st.Single, updated)
		if err != nil {
			return nil, 0, fmt.Errorf("backfill from %s: %w", m.store.Tables().Messages, err)
		}
		through, err := d.ParseHostInstant(out[0]["through"])
		n, _ := out[0]["inserted"].(int64)
		return through, n, err
	}
	// Staged: the recoverable messages, staged in a temporary table by one
	// scan, which backfill_through and the insert read. Sharded: each
	// statement runs on every shard. Either way the transaction's snapshot
	// keeps the messages unchanged meanwhile.
	if st.Stage != "" {
		for _, stmt := range []string{st.Drop, st.Stage} {
			if err := tx.Exec(stmt).Error; err != nil {
				return nil, 0, fmt.Errorf("scan %s: %w", m.store.Tables().Messages, err)
			}
		}
	}
	var max any
	if err := tx.Raw(st.Through).Row().Scan(&max); err != nil {
		return nil, 0, fmt.Errorf("compute backfill_through: %w", err)
	}
	through, err := d.ParseHostInstant(max)
	if err != nil {
		return nil, 0, err
	}
	ins := tx.Exec(st.Insert, updated)
	if ins.Error != nil {
		return nil, 0, fmt.Errorf("insert from %s: %w", m.store.Tables().Messages, ins.Error)
	}
	if st.Drop != "" {
		err = tx.Exec(st.Drop).Error
	}
	return through, ins.RowsAffected, err
}
