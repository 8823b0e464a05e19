package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/subagentctx/subagentctx/internal/liberr"
	"gorm.io/gorm"
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

// Grant is privileges on one table.
type Grant struct {
	Privileges []string
	Table      string
}

// Grants are the table privileges part needs, with the host's table names
// t (defaults filled in; an empty meta table is DefaultMetaTable).
// PartMigrate's are those it needs besides owning the table it creates
// (and CREATE on the schema).
func Grants(t Tables, part Part) ([]Grant, error) {
	t = t.WithDefaults()
	if t.Meta == "" {
		t.Meta = DefaultMetaTable
	}
	switch part {
	case PartMigrate:
		return []Grant{
			{[]string{"SELECT", "REFERENCES"}, t.Sessions},
			{[]string{"SELECT"}, t.Messages},
		}, nil
	case PartLive:
		return []Grant{{[]string{"SELECT", "INSERT", "UPDATE"}, Table}, {[]string{"SELECT"}, t.Meta}}, nil
	case PartRead:
		return []Grant{
			{[]string{"SELECT"}, Table}, {[]string{"SELECT"}, t.Meta},
			{[]string{"SELECT"}, t.Sessions}, {[]string{"SELECT"}, t.Messages},
		}, nil
	case PartPrune:
		return []Grant{{[]string{"SELECT", "DELETE"}, Table}, {[]string{"SELECT", "INSERT", "UPDATE"}, t.Meta}}, nil
	case PartImport:
		return []Grant{
			{[]string{"SELECT", "INSERT", "UPDATE", "DELETE"}, Table}, {[]string{"SELECT", "INSERT", "UPDATE"}, t.Meta},
		}, nil
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

// ErrPrivilege is wrapped by CheckPrivileges' error: the role lacks a
// privilege its part needs.
var ErrPrivilege = errors.New("the database role lacks a privilege")

// PrivilegeChecker is implemented by a dialect whose database has roles
// (PostgreSQL): Lacking returns the first privilege, in the grants'
// order, that the session's role does not hold on its table (ok when it
// holds them all), asking for all of them in one statement — then any
// the dialect's own statements need on a function of the database's, as
// "FUNCTION name(types)". SQLite has none: the file's permissions decide
// (the contract's §4.4). Refused
// reports whether err is the database refusing the role a statement for
// want of a privilege or of ownership.
type PrivilegeChecker interface {
	Lacking(ctx context.Context, db *gorm.DB, grants []Grant) (privilege, table string, ok bool, err error)
	Refused(err error) bool
}

// CheckPrivileges reports, at boot rather than per frame, the first
// privilege part needs that the session's role lacks: an error wrapping
// ErrPrivilege that names the privilege, the table and the GRANT.
func (s *Store) CheckPrivileges(ctx context.Context, part Part) error {
	c, ok := s.d.(PrivilegeChecker)
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
