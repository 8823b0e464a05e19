package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
)

// dsn is a parsed --db value.
type dsn struct {
	postgres bool
	value    string // the SQLite path or the PostgreSQL URL
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
	case strings.HasSuffix(raw, ".db"), strings.HasSuffix(raw, ".sqlite"):
		return dsn{value: raw}, nil
	}
	return dsn{}, fmt.Errorf("--db %q is neither SQLite (sqlite:PATH, *.db, *.sqlite) nor PostgreSQL (postgres://, postgresql://)", postgres.Redact(raw))
}

// String is the DSN as it may be shown: without its password.
func (d dsn) String() string {
	if d.postgres {
		return postgres.Redact(d.value)
	}
	return "sqlite:" + d.value
}

// redact removes the DSN's password from any text about to be printed.
func (d dsn) redact(s string) string {
	if !d.postgres {
		return s
	}
	return postgres.RedactText(s, d.value)
}

// store is what both SQL adapters' stores are.
type store interface {
	core.Store
	core.Reader
	backfill.Target
	Close() error
}

// mode says how a command opens the database.
type mode int

const (
	// readOnly: attach to an existing database; create nothing.
	readOnly mode = iota
	// migrating: attach; the migration pass creates what is missing.
	migrating
	// writing: create the table if absent (the recorder needs it).
	writing
)

func (e *env) open(ctx context.Context, m mode) (store, error) {
	var db *gorm.DB
	var err error
	if e.dsn.postgres {
		db, err = postgres.OpenDB(e.dsn.value)
	} else {
		if m == readOnly {
			if _, statErr := os.Stat(e.dsn.value); statErr != nil {
				return nil, fmt.Errorf("no SQLite database at %s", e.dsn.value)
			}
		}
		db, err = sqlite.OpenDB(e.dsn.value)
	}
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	var s store
	switch {
	case e.dsn.postgres && m == writing:
		s, err = postgres.New(ctx, db, e.tables)
	case e.dsn.postgres:
		s, err = postgres.Attach(db, e.tables)
	case m == writing:
		s, err = sqlite.New(ctx, db, e.tables)
	default:
		s, err = sqlite.Attach(db, e.tables)
	}
	if err != nil {
		sqlDB.Close()
		return nil, err
	}
	return closer{store: s, close: sqlDB.Close}, nil
}

// closer closes the connections this command opened.
type closer struct {
	store
	close func() error
}

func (c closer) Close() error { return errors.Join(c.store.Close(), c.close()) }
