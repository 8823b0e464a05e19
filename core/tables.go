package core

import (
	"fmt"
	"regexp"
	"strings"
)

// Table is the table this project owns and creates.
const Table = "task_session_subagents"

// HostTables names the host's tables that the library reads or references.
// The zero value means Kandev's names.
type HostTables struct {
	// Sessions is the host's sessions table; task_session_subagents has a
	// foreign key to its id with ON DELETE CASCADE. Never created or altered.
	Sessions string
	// Messages is the host's messages table, read by the backfill and the
	// health check. Never created or altered.
	Messages string
	// Meta is the key/value table holding the activation keys; created if
	// absent as (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '').
	Meta string
}

// Kandev's table names, the defaults.
const (
	DefaultSessionsTable = "task_sessions"
	DefaultMessagesTable = "task_session_messages"
	DefaultMetaTable     = "kandev_meta"
)

// WithDefaults fills empty names with Kandev's.
func (h HostTables) WithDefaults() HostTables {
	if h.Sessions == "" {
		h.Sessions = DefaultSessionsTable
	}
	if h.Messages == "" {
		h.Messages = DefaultMessagesTable
	}
	if h.Meta == "" {
		h.Meta = DefaultMetaTable
	}
	return h
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// ValidateIdentifier accepts a table name, optionally schema-qualified
// (schema.table), each part a plain SQL identifier of at most 63 characters.
// Names are validated before any SQL runs and are always quoted in SQL.
func ValidateIdentifier(field, name string) error {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return fmt.Errorf("%s table %q: at most one schema qualifier (schema.table) is allowed", field, name)
	}
	for _, p := range parts {
		if !identifier.MatchString(p) {
			return fmt.Errorf("%s table %q is not a valid identifier: want letters, digits and _ (not first), at most 63 characters", field, name)
		}
	}
	return nil
}

// Validate checks every name (after defaults) and that they are distinct.
func (h HostTables) Validate() error {
	h = h.WithDefaults()
	for _, f := range []struct{ field, name string }{{"sessions", h.Sessions}, {"messages", h.Messages}, {"meta", h.Meta}} {
		if err := ValidateIdentifier(f.field, f.name); err != nil {
			return err
		}
		if strings.EqualFold(f.name, Table) {
			return fmt.Errorf("%s table %q is the name of the table this library owns", f.field, f.name)
		}
	}
	return nil
}

// QuoteIdentifier quotes a validated (optionally schema-qualified) name for
// SQL: "schema"."table". Both SQLite and PostgreSQL accept double quotes.
func QuoteIdentifier(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = `"` + p + `"`
	}
	return strings.Join(parts, ".")
}
