// Package migration is the migration pass that runs at every boot
// (docs/CONTRACT.md §4): create the table, check its shape and upgrade an
// older one, publish subagent_context_execution_since, and recover the
// history from the host's messages atomically with the two activation keys.
// A pass never aborts the host's boot: a failed step is reported and logged
// at WARN with its name, and writes nothing that claims success.
//
// Its reference semantics, in Go, is package history (Recover for one
// message, Pass for a whole history); both SQL dialects must produce
// exactly what it produces (differential fuzz tests check). The SQL
// itself is the store's (package sqlstore); this package runs the steps in
// the contract's order, guards them, reports and logs them.
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package migration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// Migrator runs migration passes over one store.
type Migrator struct {
	store *sqlstore.Store
	log   *slog.Logger
	now   func() time.Time
	hook  func(stage string) error

	// sampled are the instants this Migrator's backfills took from the
	// clock: capture_since is one of them when an attempt reported failed
	// had committed after all (an ambiguous commit).
	mu      sync.Mutex
	sampled []time.Time
}

// Option configures a Migrator.
type Option func(*Migrator)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(m *Migrator) { m.log = l } }

// WithClock sets the clock for the keys' instants and the backfilled rows'
// updated_at (default time.Now).
func WithClock(now func() time.Time) Option { return func(m *Migrator) { m.now = now } }

// WithHook sets a function called between the statements of the shape
// step and of the backfill transaction, with the stage's name; an error it
// returns aborts the transaction there. It exists for fault-injection
// tests (the shape step's stages are its numbered steps' Stages, "add
// column <name>" and "before commit"; the backfill's "inserted", "wrote
// <key>" and "before commit").
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
var errNoStore = liberr.Errorf("migration: the store is nil")

// Run runs a whole pass in the contract's order: Prepare, then Backfill,
// under one hold of the pass's lock (so that what Prepare read of the
// catalog still holds for Backfill).
func (m *Migrator) Run(ctx context.Context) Report {
	p, err := m.pass(ctx)
	if p != nil {
		defer p.Close()
	}
	r := m.prepare(ctx, p, err)
	r.Steps = append(r.Steps, m.backfillStep(ctx, p, err))
	return r
}

// Prepare runs the steps the live path needs before its first write: the
// table, its shape (upgrading an older one) and the execution key. Backfill,
// which scans the message history, can follow later.
func (m *Migrator) Prepare(ctx context.Context) Report {
	p, err := m.pass(ctx)
	if p != nil {
		defer p.Close()
	}
	return m.prepare(ctx, p, err)
}

// Backfill runs the backfill step alone (it checks the shape itself).
func (m *Migrator) Backfill(ctx context.Context) StepResult {
	p, err := m.pass(ctx)
	if p != nil {
		defer p.Close()
	}
	return m.backfillStep(ctx, p, err)
}

// passStep is a step run on the pass that holds the lock.
type passStep func(ctx context.Context, p *sqlstore.Pass, res *StepResult) error

// prepare runs Prepare's steps on p; each fails with locked, the lock not
// taken, when it is not nil.
func (m *Migrator) prepare(ctx context.Context, p *sqlstore.Pass, locked error) Report {
	var r Report
	for _, s := range []struct {
		name string
		run  passStep
	}{{StepTable, m.createTable}, {StepShape, m.checkShape}, {StepExecutionKey, m.writeExecutionKey}} {
		r.Steps = append(r.Steps, m.onPass(ctx, s.name, p, locked, s.run))
	}
	return r
}

// backfillStep runs the backfill step on p (or fails with locked).
func (m *Migrator) backfillStep(ctx context.Context, p *sqlstore.Pass, locked error) StepResult {
	return m.onPass(ctx, StepBackfill, p, locked, m.backfill)
}

// onPass runs the step run on p, or fails it with locked.
func (m *Migrator) onPass(ctx context.Context, name string, p *sqlstore.Pass, locked error, run passStep) StepResult {
	return m.step(ctx, name, func(ctx context.Context, res *StepResult) error {
		if locked != nil {
			return locked
		}
		return run(ctx, p, res)
	})
}

const errNoLock = "the migration pass's lock was not taken"

// pass takes the migration pass's lock, so that passes started together
// — replicas booting at once — run one after the other, each finding
// what the one before it did (docs/CONTRACT.md §4). Without a store it
// returns none: every step then fails, saying so (step).
func (m *Migrator) pass(ctx context.Context) (*sqlstore.Pass, error) {
	if m.store == nil {
		return nil, nil
	}
	p, err := m.store.Pass(ctx, sqlstore.WithStageHook(m.hook))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", errNoLock, err)
	}
	return p, nil
}

// step runs one step, timing it. A failure is logged at WARN with the
// step's name; a step stopped by its context's cancellation is reported
// as cancelled, at INFO: a host shutting down is not a failure. A step
// that ran out of its context's deadline failed: a host that warns on
// failures must see a pass that timed out.
func (m *Migrator) step(ctx context.Context, name string, fn func(context.Context, *StepResult) error) StepResult {
	res := StepResult{Step: name, Status: Ran}
	start := time.Now()
	err := errNoStore
	if m.store != nil {
		err = fn(ctx, &res)
	}
	res.Duration = time.Since(start)
	switch {
	case err != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		err = fmt.Errorf("ran out of time: %w", errors.Join(context.Cause(ctx), err))
		fallthrough
	case err != nil && ctx.Err() == nil:
		res.Err = liberr.Errorf("%s step: %w", name, err)
		res.Status, res.Detail = Failed, strings.TrimPrefix(res.Err.Error(), liberr.Prefix+name+" step: ")
		res.RowsInserted, res.RowsMerged, res.KeysWritten = 0, 0, nil // nothing that claims success
		m.log.LogAttrs(
			ctx, slog.LevelWarn, "subagentctx: migration step failed", slog.String("step", name), slog.Any("error", err),
		)
	case err != nil:
		res.Err = liberr.Errorf("%s step: %w", name, err)
		res.Status, res.Detail = Cancelled, "cancelled: "+context.Cause(ctx).Error()
		res.RowsInserted, res.RowsMerged, res.KeysWritten = 0, 0, nil
		m.log.LogAttrs(ctx, slog.LevelInfo, "subagentctx: migration step cancelled", slog.String("step", name))
	default:
		m.log.LogAttrs(
			ctx,
			slog.LevelInfo,
			"subagentctx: migration step "+string(res.Status),
			slog.String("step", name),
			slog.String("detail", res.Detail),
			slog.Int64(
				"rows_inserted",
				res.RowsInserted,
			),
			slog.Int64("rows_merged", res.RowsMerged),
			slog.Any("keys_written", res.KeysWritten),
		)
	}
	return res
}

// createTable is step 1: the table and indexes if absent (AC-17); a second
// pass is a no-op (AC-18). Without the host's sessions table it fails:
// the library never creates the host's tables, nor its own beside them.
func (m *Migrator) createTable(ctx context.Context, p *sqlstore.Pass, res *StepResult) error {
	ran, left := p.MakeSchema(ctx)
	if left != nil && !errors.Is(left, sqlstore.ErrLeftToOwner) {
		return left
	}
	// The pass runs at the live path's boot: a role that could not write
	// is told here, once, not by every frame.
	if err := m.store.CheckPrivileges(ctx, sqlstore.PartLive); err != nil {
		return err
	}
	res.Detail = "table, indexes and meta table present"
	if len(ran) > 0 {
		res.Detail += "; ran " + summarise(ran)
	}
	m.leftToOwner(ctx, res, StepTable, left)
	return nil
}

// leftToOwner reports, in res and at WARN, a cleanup the step left to the
// table's owner (sqlstore.ErrLeftToOwner), if any. Not a failure: this
// build writes unharmed; the owner is told.
func (m *Migrator) leftToOwner(ctx context.Context, res *StepResult, step string, left error) {
	if left == nil {
		return
	}
	res.Err, res.Detail = left, res.Detail+"; "+strings.TrimPrefix(left.Error(), liberr.Prefix)
	m.log.LogAttrs(ctx, slog.LevelWarn, "subagentctx: migration step left a cleanup to the table's owner",
		slog.String("step", step), slog.Any("error", left))
}

// summarise names DDL statements by what each does to which object
// ("CREATE INDEX CONCURRENTLY idx_…"; a DO block by its first such line).
func summarise(stmts []string) string {
	out := make([]string, len(stmts))
	for i, q := range stmts {
		out[i] = strings.TrimSpace(strings.SplitN(q, "\n", 2)[0])
		if m := ddlHead.FindString(q); m != "" {
			out[i] = strings.TrimSpace(m)
		}
	}
	return strings.Join(out, "; ")
}

// ddlHead is a DDL statement's verb, object kind, options and name.
var ddlHead = regexp.MustCompile(`(?m)^\s*(CREATE|DROP|ALTER)( OR REPLACE)?( UNIQUE)? ` +
	`(TABLE|INDEX|TRIGGER|FUNCTION|VIEW)( CONCURRENTLY)?( IF (NOT )?EXISTS)? [^\s(]+`)

// checkShape is step 2: the table reaches its declared shape — the
// numbered steps it has not had, then the columns it lacks — in one
// transaction, every row kept (AC-33, 33a).
func (m *Migrator) checkShape(ctx context.Context, p *sqlstore.Pass, res *StepResult) error {
	ev, err := p.Evolve(ctx)
	if err != nil {
		return fmt.Errorf("the table keeps its shape: %w", err)
	}
	res.RowsMerged = ev.Merged
	res.Detail = ev.String()
	if !ev.Changed() && ev.Placed == nil {
		res.Status = Skipped
	}
	m.leftToOwner(ctx, res, StepShape, ev.Left)
	return nil
}

// writeExecutionKey is step 3 (AC-33b): when the declared shape holds,
// however it came about, write execution_since if absent.
func (m *Migrator) writeExecutionKey(ctx context.Context, p *sqlstore.Pass, res *StepResult) error {
	if why, err := m.endState(ctx, p); err != nil || why != "" {
		res.Status, res.Detail = Skipped, why
		return err
	}
	wrote, err := p.WriteExecutionKey(ctx, m.now())
	if err != nil {
		return err
	}
	if wrote {
		res.KeysWritten = []string{storekit.ExecutionSinceKey}
		res.Detail = "written"
	} else {
		res.Status, res.Detail = Skipped, "already present"
	}
	return nil
}

// endState says what keeps the table from its declared shape ("" when it
// holds).
func (m *Migrator) endState(ctx context.Context, p *sqlstore.Pass) (string, error) {
	diff, err := p.ShapeDiff(ctx)
	if err != nil {
		return "cannot read the table's shape", err
	}
	if diff != "" {
		return "the table is not in its declared shape yet (" + diff + ")", nil
	}
	return "", nil
}

// backfill is step 4 (AC-21 … AC-24f, docs/CONTRACT.md §8.5): history
// merged into the rows live frames wrote first and inserted for the pairs
// without one, with both activation keys, in one transaction serialised
// with the live writes.
func (m *Migrator) backfill(ctx context.Context, p *sqlstore.Pass, res *StepResult) error {
	why, err := m.endState(ctx, p)
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
		if a.CaptureSince.Time != nil && m.tookFromClock(*a.CaptureSince.Time) {
			res.Status, res.Detail = Ran, "ran in this boot: an earlier attempt, reported failed, had committed "+
				"(capture_since is its instant)"
		}
		return nil
	}
	m.mu.Lock()
	before := len(m.sampled)
	m.mu.Unlock()
	out, err := p.Backfill(ctx, m.clock)
	if err != nil {
		return err
	}
	// Reported as it went: its instants are no ambiguous commit's, and a
	// later pass of this Migrator that finds them is skipped, not "ran".
	m.mu.Lock()
	m.sampled = m.sampled[:before]
	m.mu.Unlock()
	if out.Activated {
		res.Status, res.Detail = Skipped, "already activated (another pass completed first)"
		return nil
	}
	res.RowsInserted, res.RowsMerged, res.KeysWritten = out.Inserted, out.Merged, out.KeysWritten
	res.Detail = fmt.Sprintf(
		"%d rows inserted, %d live rows merged with their history, from %s", out.Inserted, out.Merged,
		m.store.Tables().Messages,
	)
	return nil
}

// clock is the backfill's clock: m.now, each instant remembered.
func (m *Migrator) clock() time.Time {
	t := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sampled = append(m.sampled, storekit.CanonicalTime(t))
	return t
}

// tookFromClock reports whether t is an instant this Migrator's backfills
// sampled.
func (m *Migrator) tookFromClock(t time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.ContainsFunc(m.sampled, t.Equal)
}
