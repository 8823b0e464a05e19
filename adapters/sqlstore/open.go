package sqlstore

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
)

// Connect opens a handle to the database an adapter's Open names: a
// read-only one when readOnly is set (the database refuses every write).
// It should not connect yet where the driver allows (the first statement
// connects).
type Connect func(readOnly bool) (*gorm.DB, error)

// Open opens a store on its own connections: it validates the options
// (before any connection or file is opened), connects through connect,
// and, unless ReadOnly or NoSchema is given, creates the table and what
// it needs (EnsureSchema; the host's sessions table must exist) and
// checks that the role may write (CheckPrivileges, PartLive). Close
// releases the connections. The adapters' Open functions are this with
// their dialect; the command line uses them with its options.
func Open(ctx context.Context, d sqldialect.Dialect, connect Connect, opts ...Option) (*Store, error) {
	o, err := configure(opts)
	if err != nil {
		return nil, err // refused before any connection
	}
	db, err := connect(o.readOnly)
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	s, err := New(db, d, opts...)
	if err == nil && !s.readOnly && !s.noSchema {
		// A cleanup left to the table's owner harms no write: the
		// migration pass reports it.
		if err = s.EnsureSchema(ctx); err == nil || errors.Is(err, ErrLeftToOwner) {
			err = s.CheckPrivileges(ctx, PartLive)
		}
	}
	if err != nil {
		return nil, errors.Join(err, sqlDB.Close())
	}
	s.owned = sqlDB.Close
	return s, nil
}
