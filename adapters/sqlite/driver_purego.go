//go:build !cgo

package sqlite

import (
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// Without cgo the adapter drives modernc.org/sqlite, SQLite's C source
// translated to Go, through the same gorm.io/driver/sqlite dialector
// (driver_cgo.go is the build with cgo; docs/sqlite.md says
// why this driver).

// DriverName is the database/sql driver this build opens SQLite with:
// modernc.org/sqlite's. A host handing over its own *sql.DB (NewSQL) opens
// it with this name and DSN.
const DriverName = "sqlite"

// Pragmas are set in the DSN so that every pooled connection has them: WAL,
// a busy timeout instead of an immediate "database is locked", foreign keys
// on (SQLite's default is off, which would silently disable AC-16's
// cascade), and BEGIN IMMEDIATE for transactions so a writer never has to
// upgrade a read lock; times written in SQLite's own text form, as
// go-sqlite3 writes them, so that one file serves both builds. They are
// modernc.org/sqlite's parameters.
const Pragmas = "_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)" +
	"&_txlock=immediate&_pragma=synchronous(NORMAL)&_time_format=sqlite"

// PragmaParam is the DSN parameter that sets a pragma on every connection
// this build's driver opens, for a host building its own DSN:
// modernc.org/sqlite runs any as _pragma=name(value).
func PragmaParam(name, value string) string { return "_pragma=" + name + "(" + value + ")" }

// readOnlyParams refuse every write on a connection (an operator's reads,
// the web view).
const readOnlyParams = "mode=ro&_pragma=query_only(1)&_pragma=busy_timeout(10000)&_time_format=sqlite"

// The functions are the driver's, registered once for every connection it
// opens.
func init() {
	fns := map[string]struct {
		n  int32
		fn func(args []driver.Value) (driver.Value, error)
	}{
		"subagentctx_message": {7, func(a []driver.Value) (driver.Value, error) {
			return message(a[0], a[1], a[2], a[3], a[4], a[5], a[6])
		}},
		"subagentctx_message_key": {7, func(a []driver.Value) (driver.Value, error) {
			return messageKey(a[0], a[1], a[2], a[3], a[4], a[5], a[6])
		}},
		"subagentctx_instant": {1, func(a []driver.Value) (driver.Value, error) { return instant(a[0]), nil }},
	}
	for name, f := range fns {
		sqlite.MustRegisterDeterministicScalarFunction(name, f.n,
			func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) { return f.fn(args) })
	}
}

// classify is docs/CONTRACT.md §6.1's table for modernc.org/sqlite's
// codes, which are extended: the primary code is the low byte.
func classify(err error) error {
	// A constraint is the frame's own, whatever came with it.
	if sqldialect.Any(err, func(e error) bool {
		se, ok := e.(*sqlite.Error)
		return ok && se.Code()&0xff == codeConstraint
	}) {
		return core.ErrConstraint
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	return classifyCode(se.Code() & 0xff)
}

// register checks that a connection is modernc.org/sqlite's, which has the
// functions (init registered them with the driver).
func register(driverConn any) error {
	if _, ok := driverConn.(interface {
		NewBackup(string) (*sqlite.Backup, error)
	}); !ok {
		return liberr.Errorf("sqlite: the handle's driver is %T, want modernc.org/sqlite (this build has no cgo)",
			driverConn)
	}
	return nil
}
