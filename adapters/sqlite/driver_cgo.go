//go:build cgo

package sqlite

import (
	"errors"

	"github.com/mattn/go-sqlite3"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// With cgo the adapter drives mattn/go-sqlite3, the C library behind the
// design card's gorm.io/driver/sqlite (driver_purego.go is the build
// without cgo).

// DriverName is the database/sql driver this build opens SQLite with:
// go-sqlite3's. A host handing over its own *sql.DB (NewSQL) opens it with
// this name and DSN.
const DriverName = "sqlite3"

// Pragmas are set in the DSN so that every pooled connection has them: WAL,
// a busy timeout instead of an immediate "database is locked", foreign keys
// on (SQLite's default is off, which would silently disable AC-16's
// cascade), and BEGIN IMMEDIATE for transactions so a writer never has to
// upgrade a read lock. They are go-sqlite3's parameters.
const Pragmas = "_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL"

// PragmaParam is the DSN parameter that sets a pragma on every connection
// this build's driver opens, for a host building its own DSN: go-sqlite3
// names each it knows with a leading underscore (_busy_timeout=50).
func PragmaParam(name, value string) string { return "_" + name + "=" + value }

// readOnlyParams refuse every write on a connection (an operator's reads,
// the web view).
const readOnlyParams = "mode=ro&_query_only=1&_busy_timeout=10000"

// classify is docs/CONTRACT.md §6.1's table for go-sqlite3's codes.
func classify(err error) error {
	// A constraint is the frame's own, whatever came with it.
	if sqldialect.Any(err, func(e error) bool {
		se, ok := e.(sqlite3.Error)
		return ok && int(se.Code) == codeConstraint
	}) {
		return core.ErrConstraint
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return nil
	}
	return classifyCode(int(se.Code))
}

// register adds the adapter's functions to one connection: the message
// view's reader (history.Recover) and the instant of a host time.
func register(driverConn any) error {
	c, ok := driverConn.(*sqlite3.SQLiteConn)
	if !ok {
		return liberr.Errorf("sqlite: the handle's driver is %T, want mattn/go-sqlite3 (this build has cgo)", driverConn)
	}
	for name, fn := range map[string]any{
		"subagentctx_message": message, "subagentctx_message_key": messageKey, "subagentctx_instant": instant,
	} {
		if err := c.RegisterFunc(name, fn, true); err != nil {
			return err
		}
	}
	return nil
}
