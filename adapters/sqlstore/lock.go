package sqlstore

import (
	"context"
	"sync"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
)

// passHeld marks a context whose pass already holds the lock, so that
// the steps it runs (EnsureSchema among them) do not take it again. Its
// value is the pass's *passCatalog.
type passHeld struct{}

// passCatalog is what a pass has read of the catalog under its lock. Each
// step reads the table's shape rather than trust the step before it, and
// while the lock is held only the pass itself changes the table: on an
// up-to-date table one read serves every step, so that a pass with
// nothing to do costs a few round trips (docs/CONTRACT.md §4). The pass
// forgets it all whenever it runs DDL.
type passCatalog struct {
	mu      sync.Mutex
	shape   *sqldialect.TableInfo // the table's, read outside any transaction
	present map[string]bool       // tables seen to exist: the pass drops none
	placed  bool                  // the table found placed beside the sessions
	sharded bool                  // and sharded there
}

// catalogOf is ctx's pass's catalog; nil outside a pass.
func catalogOf(ctx context.Context) *passCatalog {
	c, _ := ctx.Value(passHeld{}).(*passCatalog)
	return c
}

// forget drops what the pass has read: it is about to change the catalog,
// or has. A nil catalog (no pass) has nothing to forget.
func (c *passCatalog) forget() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shape, c.present, c.placed, c.sharded = nil, nil, false, false
}

// shapeOr is the table's shape, read by read once per pass (each time
// outside one).
func (c *passCatalog) shapeOr(read func() (sqldialect.TableInfo, error)) (sqldialect.TableInfo, error) {
	if c == nil {
		return read()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shape == nil {
		info, err := read()
		if err != nil {
			return info, err
		}
		c.shape = &info
	}
	return *c.shape, nil
}

// existsOr reports whether table name exists, asked by read until a pass
// has seen it.
func (c *passCatalog) existsOr(name string, read func() (bool, error)) (bool, error) {
	if c == nil {
		return read()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.present[name] {
		return true, nil
	}
	ok, err := read()
	if ok {
		if c.present == nil {
			c.present = map[string]bool{}
		}
		c.present[name] = true
	}
	return ok, err
}

// placeOnce runs place unless the pass has already placed the table, and
// reports whether the table is sharded.
func (c *passCatalog) placeOnce(place func() (bool, error)) (bool, error) {
	if c == nil {
		return place()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.placed {
		return c.sharded, nil
	}
	sharded, err := place()
	if err != nil {
		return false, err
	}
	c.placed, c.sharded = true, sharded
	return sharded, nil
}

// describe is the table's shape, read once per pass.
func (s *Store) describe(ctx context.Context, db *gorm.DB) (sqldialect.TableInfo, error) {
	return catalogOf(ctx).shapeOr(func() (sqldialect.TableInfo, error) { return s.d.Describe(ctx, db, Table) })
}

// tableExists reports whether a table exists; within a pass, a table once
// seen is not asked about again.
func (s *Store) tableExists(ctx context.Context, db *gorm.DB, name string) (bool, error) {
	return catalogOf(ctx).existsOr(name, func() (bool, error) { return s.d.TableExists(ctx, db, name) })
}

// holdPass takes the migration pass's lock, exclusive: one pass at a time
// over the table, in this process and in every other, from its first
// CREATE to its last key (docs/CONTRACT.md §4). It returns ctx marked as
// holding the lock (a step run with it does not wait for itself) and the
// release, which the caller must call. A ctx already holding it — a
// Pass's — is returned as it is.
func (s *Store) holdPass(ctx context.Context) (context.Context, func(), error) {
	if ctx.Value(passHeld{}) != nil {
		return ctx, func() {}, nil
	}
	release, err := s.lockPass(ctx, false)
	if err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, passHeld{}, &passCatalog{}), release, nil
}

// waitForPass returns once no migration pass holds the lock (taken shared
// and released at once): what a pass wrote before then is committed.
func (s *Store) waitForPass(ctx context.Context) error {
	if ctx.Value(passHeld{}) != nil {
		return nil
	}
	release, err := s.lockPass(ctx, true)
	if err == nil {
		release()
	}
	return err
}

func (s *Store) lockPass(ctx context.Context, shared bool) (func(), error) {
	l, ok := s.d.(sqldialect.PassLocker)
	if !ok {
		return func() {}, nil
	}
	release, err := l.LockPass(ctx, s.db, shared)
	if err != nil {
		return nil, s.opError("take the migration pass's lock", err)
	}
	return release, nil
}
