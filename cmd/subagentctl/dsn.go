package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"gorm.io/gorm"

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
	return dsn{}, fmt.Errorf("--db %q is neither SQLite (sqlite:PATH, *.db, *.sqlite, *.sqlite3) nor PostgreSQL (postgres://, postgresql://)", postgres.Redact(raw))
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
	// library's table is created if absent.
	writing
)

// open opens the store as the mode says. It never creates a SQLite file:
// a path that does not exist is refused with its name.
func (e *env) open(ctx context.Context, m mode) (*sqlstore.Store, error) {
	opt := sqlstore.WithTables(e.tables)
	var db *gorm.DB
	var err error
	switch {
	case e.dsn.postgres && m == readOnly:
		db, err = postgres.OpenDB(readOnlyDSN(e.dsn.value))
	case e.dsn.postgres:
		db, err = postgres.OpenDB(e.dsn.value)
	default:
		if _, statErr := os.Stat(e.dsn.value); statErr != nil {
			return nil, fmt.Errorf("no SQLite database at %s", e.dsn.value)
		}
		if m == readOnly {
			db, err = sqlite.OpenReadOnly(e.dsn.value)
		} else {
			db, err = sqlite.OpenDB(e.dsn.value)
		}
	}
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	var s *sqlstore.Store
	if e.dsn.postgres {
		s, err = postgres.New(db, opt)
	} else {
		s, err = sqlite.New(db, opt)
	}
	if err == nil && m == writing {
		err = s.EnsureSchema(ctx)
	}
	if err != nil {
		return nil, errors.Join(err, sqlDB.Close())
	}
	s.Own(sqlDB.Close)
	return s, nil
}

// readOnlyDSN asks PostgreSQL for read-only transactions on every
// connection: a read command can never change the database.
func readOnlyDSN(d string) string {
	if u, err := url.Parse(d); err == nil && u.Scheme != "" {
		// Appended as text: re-encoding the query would escape other
		// parameters' values (a time zone's "/"), which pgx passes on as is.
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += "default_transaction_read_only=on"
		return u.String()
	}
	return d + " default_transaction_read_only=on"
}
