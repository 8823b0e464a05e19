package sqlstore

import (
	"context"
	"sync"
	"time"
)

// Pass is one migration pass on the store (docs/CONTRACT.md §4): the door
// through which package migration runs its steps, not a host's API, and
// not stable (a host runs the pass through package migration). It holds
// the pass's lock, taken by Store.Pass, until Close, and what the pass
// has read of the catalog meanwhile, so that a pass with nothing to do
// reads it once.
type Pass struct {
	s       *Store
	catalog *passCatalog
	release func()
	once    sync.Once
	hook    func(stage string) error
}

// PassOption configures a Pass.
type PassOption func(*Pass)

// WithStageHook has the pass call hook after each stage of its shape and
// backfill steps, inside their transactions (Evolve's: its numbered
// steps' stages, "add column <name>", "before commit"; Backfill's:
// "inserted", "wrote <key>", "before commit"); an error hook returns
// aborts the transaction there. For fault-injection tests.
func WithStageHook(hook func(stage string) error) PassOption { return func(p *Pass) { p.hook = hook } }

// Pass takes the migration pass's lock — exclusive: one pass at a time
// over the table, in this process and in every other, from its first
// CREATE to its last key — waiting for it until ctx ends, and returns the
// pass that holds it. The caller must Close it.
func (s *Store) Pass(ctx context.Context, opts ...PassOption) (*Pass, error) {
	held, release, err := s.holdPass(ctx)
	if err != nil {
		return nil, err
	}
	p := &Pass{s: s, catalog: catalogOf(held), release: release, hook: func(string) error { return nil }}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// Close releases the pass's lock; a second Close does nothing.
func (p *Pass) Close() { p.once.Do(p.release) }

// in is ctx marked as the pass's: its steps find the lock held, and share
// what the pass has read of the catalog.
func (p *Pass) in(ctx context.Context) context.Context {
	return context.WithValue(ctx, passHeld{}, p.catalog)
}

// MakeSchema is the table step: EnsureSchema, returning the DDL statements
// it ran (none when everything was in place), so that the pass reports
// every change it made.
func (p *Pass) MakeSchema(ctx context.Context) ([]string, error) { return p.s.makeSchema(p.in(ctx)) }

// Evolve is the shape step: it brings the table to its declared shape, in
// one transaction, every row kept, then runs the seam check
// (docs/CONTRACT.md §4 step 2).
func (p *Pass) Evolve(ctx context.Context) (Evolution, error) { return p.s.evolve(p.in(ctx), p.hook) }

// ShapeDiff says how the table differs from its declaration, or "" when
// its declared shape holds (the backfill and the execution key wait for
// it, docs/CONTRACT.md §4 step 3).
func (p *Pass) ShapeDiff(ctx context.Context) (string, error) { return p.s.shapeDiff(p.in(ctx)) }

// WriteExecutionKey is the execution key step: it writes
// subagent_context_execution_since (AC-33b) if it is absent, and reports
// whether it wrote.
func (p *Pass) WriteExecutionKey(ctx context.Context, at time.Time) (bool, error) {
	return p.s.writeExecutionKey(p.in(ctx), at)
}

// Backfill is the backfill step: history recovered from the host's
// messages, in one transaction with the two activation keys
// (docs/CONTRACT.md §4.1); now samples capture_since.
func (p *Pass) Backfill(ctx context.Context, now func() time.Time) (BackfillResult, error) {
	return p.s.backfill(p.in(ctx), now, p.hook)
}
