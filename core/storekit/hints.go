package storekit

import (
	"context"

	"github.com/subagentctx/subagentctx/core"
)

// Synchronous is implemented by stores that do no I/O and return promptly
// whatever their context (the memory adapter): the Recorder writes to them
// on the caller's goroutine.
type Synchronous interface{ Synchronous() }

// BatchStore is implemented by stores that can write many rows in one
// transaction (group commit). UpsertBatch writes rows in order, each its own
// atomic upsert statement (AC-14), all in one transaction. It returns one
// error per row (nil: committed); a row the database refuses
// (core.ErrInvalidRow, core.ErrConstraint) does not cost the others. When
// the transaction as a whole fails, err says why, names the rows refused
// before it, and no row is written: with core.ErrUnavailable (past the
// write's deadline included, whatever the last statement said) the same
// batch may succeed later; err never has a row's kind.
type BatchStore interface {
	UpsertBatch(ctx context.Context, rows []core.Subagent) (rowErrs []error, err error)
}

// WriterHint is implemented by stores that know how many concurrent writers
// suit them (SQLite serialises writers: one; PostgreSQL takes several).
type WriterHint interface{ Writers() int }
