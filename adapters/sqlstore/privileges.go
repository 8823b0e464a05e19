package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// Part is a part of the library that uses the database, by the privileges
// it needs on PostgreSQL (docs/CONTRACT.md §4.4).
type Part string

// The parts.
const (
	// PartMigrate is the migration pass with work to do: it creates and
	// alters the table, so it runs as the table's owner.
	PartMigrate Part = "migrate"
	// PartLive is the live path — the recorder, record, record --acp —
	// and the pass at boot once the owner has migrated (it only reads).
	PartLive Part = "live"
	// PartRead is list, stats, activation, health, export and the web view.
	PartRead Part = "read"
	// PartPrune is prune.
	PartPrune Part = "prune"
	// PartImport is import: it writes rows by the merge rules, as the live
	// path does, drops the target's own reading of history the record
	// holds and merges pairs (DELETE), and writes the activation keys and
	// retention boundary.
	PartImport Part = "import"
)

// Parts are every part, in the contract's order.
func Parts() []Part { return []Part{PartMigrate, PartLive, PartRead, PartPrune, PartImport} }

// Grants are the table privileges part needs, with the host's table names
// t (defaults filled in; an empty meta table is DefaultMetaTable).
// PartMigrate's are those it needs besides owning the table it creates
// (and CREATE on the schema).
func Grants(t Tables, part Part) ([]Grant, error) {
	t = t.WithDefaults()
	if t.Meta == "" {
		t.Meta = DefaultMetaTable
	}
	g := func(table string, privileges ...string) Grant { return Grant{Privileges: privileges, Table: table} }
	switch part {
	case PartMigrate:
		return []Grant{g(t.Sessions, "SELECT", "REFERENCES"), g(t.Messages, "SELECT")}, nil
	case PartLive:
		return []Grant{g(Table, "SELECT", "INSERT", "UPDATE"), g(t.Meta, "SELECT")}, nil
	case PartRead:
		return []Grant{g(Table, "SELECT"), g(t.Meta, "SELECT"), g(t.Sessions, "SELECT"), g(t.Messages, "SELECT")}, nil
	case PartPrune:
		return []Grant{g(Table, "SELECT", "DELETE"), g(t.Meta, "SELECT", "INSERT", "UPDATE")}, nil
	case PartImport:
		return []Grant{g(Table, "SELECT", "INSERT", "UPDATE", "DELETE"), g(t.Meta, "SELECT", "INSERT", "UPDATE")}, nil
	}
	return nil, liberr.Errorf("no part %q: want one of %s", part, joinParts())
}

func joinParts() string {
	parts := Parts()
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// CheckPrivileges reports, at boot rather than per frame, the first
// privilege part needs that the session's role lacks: an error wrapping
// ErrPrivilege that names the privilege, the table and the GRANT.
func (s *Store) CheckPrivileges(ctx context.Context, part Part) error {
	c, ok := s.d.(sqldialect.PrivilegeChecker)
	if !ok {
		return nil
	}
	tables, err := s.tablesIn(ctx, s.db.WithContext(ctx))
	if err != nil {
		return s.opError("check the role's privileges", err)
	}
	grants, err := Grants(tables, part)
	if err != nil {
		return err
	}
	p, table, ok, err := c.Lacking(ctx, s.db, grants)
	if err != nil {
		return s.opError("check the role's privileges", err)
	}
	switch {
	case !ok && strings.HasPrefix(table, "FUNCTION "): // the dialect's own, which PUBLIC holds unless revoked
		return liberr.Errorf("%w: %s on %s, which the %s path needs (GRANT %s ON %s TO the role; "+
			"every role holds it unless this database revoked it from PUBLIC)", ErrPrivilege, p, table, part, p, table)
	case !ok:
		return liberr.Errorf("%w: %s on %s, which the %s path needs (GRANT %s ON %s TO the role; "+
			"subagentctl grants --role NAME --part %s prints them all)", ErrPrivilege, p, table, part, p, table, part)
	}
	return nil
}

// GrantSQL are the GRANT statements that give role what part needs on the
// host's tables t.
func GrantSQL(t Tables, part Part, role string) ([]string, error) {
	if role == "" || len(role) > 63 || strings.ContainsRune(role, 0) {
		return nil, liberr.Errorf("grants: the role %q: want a role name of 1 to 63 bytes without NUL", role)
	}
	if err := t.Validate(); err != nil {
		return nil, liberr.Errorf("%w", err)
	}
	grants, err := Grants(t, part)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(grants))
	for i, g := range grants {
		out[i] = fmt.Sprintf("GRANT %s ON %s TO %s", strings.Join(g.Privileges, ", "), quote(g.Table),
			`"`+strings.ReplaceAll(role, `"`, `""`)+`"`)
	}
	return out, nil
}
