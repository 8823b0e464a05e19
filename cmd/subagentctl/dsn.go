package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
)

// dsn is a parsed --db value.
type dsn struct {
	postgres bool
	value    string // the SQLite path or the PostgreSQL DSN
}

func parseDSN(raw string) (dsn, error) {
	switch {
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return dsn{postgres: true, value: raw}, nil
	case strings.HasPrefix(raw, "sqlite:"):
		if p := strings.TrimPrefix(raw, "sqlite:"); p != "" {
			return dsn{value: p}, nil
		}
		return dsn{}, errors.New("--db sqlite: has no path")
	case strings.HasSuffix(raw, ".db"), strings.HasSuffix(raw, ".sqlite"), strings.HasSuffix(raw, ".sqlite3"):
		return dsn{value: raw}, nil
	}
	return dsn{}, fmt.Errorf(
		"--db %q is neither SQLite (sqlite:PATH, *.db, *.sqlite, *.sqlite3) nor PostgreSQL (postgres://, postgresql://)",
		postgres.Redact(raw),
	)
}

// redact removes the DSN's password from any text about to be printed.
func (d dsn) redact(s string) string {
	if !d.postgres {
		return s
	}
	return postgres.RedactText(s, d.value)
}

// mode says how a command opens the database.
type mode int

const (
	// readOnly: the database must exist; nothing is written (the session
	// refuses writes).
	readOnly mode = iota
	// migrating: the database must exist; the migration pass creates what
	// is missing of the library's own tables.
	migrating
	// writing: the database must exist with the host's tables; the
	// library's table is created if absent; the role must hold the live
	// part's privileges.
	writing
	// importing: writing, with the import part's privileges instead.
	importing
	// pruning: the table must exist; Prune checks the prune part's
	// privileges.
	pruning
)

// open opens the store as the mode says, through the adapters' Open. It
// never creates a SQLite file: a path that does not exist is refused with
// its name.
func (e *env) open(ctx context.Context, m mode) (*sqlstore.Store, error) {
	opts := []sqlstore.Option{sqlstore.WithTables(e.tables)}
	switch m {
	case readOnly:
		opts = append(opts, sqlstore.ReadOnly())
	case migrating, importing, pruning:
		opts = append(opts, sqlstore.NoSchema())
	}
	var s *sqlstore.Store
	var err error
	if e.dsn.postgres {
		s, err = postgres.Open(ctx, e.dsn.value, opts...)
	} else if _, err = os.Stat(e.dsn.value); err != nil {
		return nil, fmt.Errorf("no SQLite database at %s", e.dsn.value)
	} else {
		s, err = sqlite.Open(ctx, e.dsn.value, opts...)
	}
	if err != nil || m != importing {
		return s, err
	}
	schema := s.EnsureSchema(ctx)
	if errors.Is(schema, sqlstore.ErrLeftToOwner) {
		fmt.Fprintln(os.Stderr, "subagentctl: warning:", schema)
		schema = nil
	}
	if err := errors.Join(schema, s.CheckPrivileges(ctx, sqlstore.PartImport)); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}
