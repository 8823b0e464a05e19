package sqldialect

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Table is the table this library owns and creates.
const Table = "task_session_subagents"

// Tables names the host's tables that the store reads or references (a
// host names it sqlstore.Tables). The zero value means the contract's
// defaults: the sessions and messages tables under the names most hosts
// give them (Kandev's), and the meta table found at first use
// (sqlstore.Store.MetaTable's doc); KandevTables is the reference host's
// names, meta table included.
type Tables struct {
	// Sessions is the host's sessions table; task_session_subagents has a
	// foreign key to its id with ON DELETE CASCADE. Never created or altered.
	Sessions string `json:"sessions"`
	// Messages is the host's messages table, read by the backfill, the
	// health check and the coverage verdicts. Never created or altered.
	Messages string `json:"messages"`
	// Meta is the key/value table holding the activation keys; created if
	// absent as (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '').
	// Empty: subagentctx_meta, or kandev_meta where the database has that
	// table and not subagentctx_meta (sqlstore.Store.MetaTable).
	Meta string `json:"meta"`
}

// The default names of the host's tables, and the meta table's two
// candidates when the host names none.
const (
	DefaultSessionsTable = "task_sessions"
	DefaultMessagesTable = "task_session_messages"
	// DefaultMetaTable is the meta table this library creates when the
	// host names none and the database has neither candidate.
	DefaultMetaTable = "subagentctx_meta"
	// KandevMetaTable is the reference host's meta table, which releases
	// before v0.3.0 created by default: where a database has it (and not
	// DefaultMetaTable), a store whose host names no meta table uses it.
	KandevMetaTable = "kandev_meta"
)

// KandevTables are the reference host's names, meta table included: the
// preset for Kandev, or a host keeping its keys in kandev_meta from the
// first boot on.
func KandevTables() Tables {
	return Tables{Sessions: DefaultSessionsTable, Messages: DefaultMessagesTable, Meta: KandevMetaTable}
}

// WithDefaults fills the sessions and messages tables' empty names; an
// empty meta table stays empty (found at first use).
func (t Tables) WithDefaults() Tables {
	if t.Sessions == "" {
		t.Sessions = DefaultSessionsTable
	}
	if t.Messages == "" {
		t.Messages = DefaultMessagesTable
	}
	return t
}

// ErrInvalidTableName is wrapped by Tables.Validate's errors.
var ErrInvalidTableName = errors.New("invalid table name")

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// Validate checks every name given (after defaults): each is a plain SQL
// identifier of at most 63 characters, and none is this library's table.
// A schema-qualified name is refused on every dialect, because SQLite cannot
// declare a foreign key into another schema; on PostgreSQL, choose the
// schema with search_path (docs/CONTRACT.md §8.2).
func (t Tables) Validate() error {
	t = t.WithDefaults()
	tables := []struct{ field, name string }{{"sessions", t.Sessions}, {"messages", t.Messages}, {"meta", t.Meta}}
	for _, f := range tables {
		if f.name == "" { // the meta table, found at first use
			continue
		}
		switch {
		case strings.Contains(f.name, "."):
			return fmt.Errorf(
				"%w: %s table %q is schema-qualified: give the plain name (on PostgreSQL, set the schema with search_path)",
				ErrInvalidTableName, f.field, f.name,
			)
		case !identifier.MatchString(f.name):
			return fmt.Errorf("%w: %s table %q: want letters, digits and _ (not first), at most 63 characters",
				ErrInvalidTableName, f.field, f.name)
		case strings.EqualFold(f.name, Table):
			return fmt.Errorf("%w: %s table %q is the name of the table this library owns",
				ErrInvalidTableName, f.field, f.name)
		}
	}
	return nil
}
