package sqlstore

import "github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"

// The host's names for what package sqldialect declares for the dialects
// as well: the host's tables, a grant, the library's own table.
type (
	Tables = sqldialect.Tables
	Grant  = sqldialect.Grant
)

// Table is the table this library owns and creates; the others are the
// default names of the host's tables, and the meta table's two candidates
// when the host names none (sqldialect's constants of the same names).
const (
	Table                = sqldialect.Table
	DefaultSessionsTable = sqldialect.DefaultSessionsTable
	DefaultMessagesTable = sqldialect.DefaultMessagesTable
	DefaultMetaTable     = sqldialect.DefaultMetaTable
	KandevMetaTable      = sqldialect.KandevMetaTable
)

// KandevTables are the reference host's names, meta table included: the
// preset for Kandev, or a host keeping its keys in kandev_meta from the
// first boot on.
func KandevTables() Tables { return sqldialect.KandevTables() }

// quote quotes a validated identifier for SQL; both dialects accept double
// quotes.
func quote(name string) string { return `"` + name + `"` }
