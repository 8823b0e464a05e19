package sqlstore

import (
	"context"

	"gorm.io/gorm"
)

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

// passHeld marks a context whose pass already holds the lock, so that
// the steps it runs (EnsureSchema among them) do not take it again.
type passHeld struct{}

// LockPass takes the migration pass's lock, exclusive: one pass at a time
// over the table, in this process and in every other, from its first
// CREATE to its last key (docs/CONTRACT.md §4). It returns ctx marked as
// holding the lock (a step run with it does not wait for itself) and the
// release, which the caller must call. A ctx already holding it is
// returned as it is.
func (s *Store) LockPass(ctx context.Context) (context.Context, func(), error) {
	if ctx.Value(passHeld{}) != nil {
		return ctx, func() {}, nil
	}
	release, err := s.lockPass(ctx, false)
	if err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, passHeld{}, true), release, nil
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
	l, ok := s.d.(PassLocker)
	if !ok {
		return func() {}, nil
	}
	release, err := l.LockPass(ctx, s.db, shared)
	if err != nil {
		return nil, s.opError("take the migration pass's lock", err)
	}
	return release, nil
}
