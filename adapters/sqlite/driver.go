//go:build cgo

package sqlite

import (
	"errors"

	"github.com/mattn/go-sqlite3"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
)

// The parts of the adapter that need go-sqlite3 itself, which needs cgo
// (nocgo.go stands in for them without it).

// Available reports whether this build can open SQLite: nil, it can.
func Available() error { return nil }

// classify is docs/CONTRACT.md §6.1's table for go-sqlite3's codes.
func classify(err error) error {
	// A constraint is the frame's own, whatever came with it.
	if sqlstore.Any(err, func(e error) bool {
		se, ok := e.(sqlite3.Error)
		return ok && se.Code == sqlite3.ErrConstraint
	}) {
		return core.ErrConstraint
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code {
	case sqlite3.ErrConstraint:
		return core.ErrConstraint
	case sqlite3.ErrBusy, sqlite3.ErrLocked, // another writer: the busy timeout ran out
		sqlite3.ErrCantOpen, sqlite3.ErrIoErr, sqlite3.ErrFull, sqlite3.ErrNomem, // the file, the disk, memory
		sqlite3.ErrReadonly,  // a read-only file or mount
		sqlite3.ErrInterrupt: // the write's deadline interrupted it
		return core.ErrUnavailable
	}
	return nil
}

// register adds the adapter's functions to one connection: the message
// view's reader (history.Recover) and the instant of a host time.
func register(driverConn any) error {
	c, ok := driverConn.(*sqlite3.SQLiteConn)
	if !ok {
		return core.Errorf("sqlite: the handle's driver is %T, want mattn/go-sqlite3", driverConn)
	}
	if err := c.RegisterFunc("subagentctx_message", message, true); err != nil {
		return err
	}
	return c.RegisterFunc("subagentctx_instant", instant, true)
}
