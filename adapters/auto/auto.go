// Package auto opens the store on a host's handle with the adapter its
// driver calls for — SQLite's or PostgreSQL's — so that a host that runs
// on either writes no switch of its own. It links both adapters; a host
// on one dialect calls that adapter's New or NewSQL instead.
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package auto

import (
	"database/sql"
	"reflect"
	"strings"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// New returns the store on a *gorm.DB, as sqlite.New or postgres.New
// would, chosen by the handle's dialector ("sqlite" or "postgres").
func New(db *gorm.DB, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	if db == nil || db.Dialector == nil {
		return nil, liberr.Errorf("auto.New: *gorm.DB is nil")
	}
	switch name := db.Dialector.Name(); name {
	case "sqlite":
		return sqlite.New(db, opts...)
	case "postgres":
		return postgres.New(db, opts...)
	default:
		return nil, liberr.Errorf("auto.New: the handle's dialector is %q: want sqlite or postgres", name)
	}
}

// NewSQL returns the store on a *sql.DB, as sqlite.NewSQL or
// postgres.NewSQL would, chosen by the package of its driver: a SQLite
// driver (github.com/mattn/go-sqlite3, modernc.org/sqlite, …) or a
// PostgreSQL one (github.com/jackc/pgx's stdlib, github.com/lib/pq).
func NewSQL(db *sql.DB, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	if db == nil {
		return nil, liberr.Errorf("auto.NewSQL: *sql.DB is nil")
	}
	t := reflect.TypeOf(db.Driver())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch pkg := t.PkgPath(); {
	case strings.Contains(pkg, "sqlite"):
		return sqlite.NewSQL(db, opts...)
	case strings.Contains(pkg, "pgx"), strings.Contains(pkg, "lib/pq"), strings.Contains(pkg, "postgres"):
		return postgres.NewSQL(db, opts...)
	default:
		return nil, liberr.Errorf("auto.NewSQL: the handle's driver is %s (%s): want a SQLite or a PostgreSQL driver",
			t.Name(), pkg)
	}
}
