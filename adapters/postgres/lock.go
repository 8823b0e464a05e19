package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
)

// passKey is the migration pass's advisory lock key: the table's own
// schema when it exists — so that a role whose search_path starts with a
// schema of its own computes the owner's key — else the schema a CREATE
// would put it in. Earlier releases keyed by current_schema() alone: the
// same key wherever the table sits in the schema its users resolve first,
// so that a pass of theirs and one of this build still exclude each
// other during a rolling deploy.
const passKey = `SELECT hashtext(coalesce((SELECT n.nspname FROM pg_class c
	JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass('` + sqlstore.Table + `')),
	current_schema()) || '.` + sqlstore.Table + `')`

// passClass is the advisory lock's first key: this library's pass.
const passClass = 1937010529

// localPasses serialises, within this process, the passes and the
// readers waiting for one on the same pool, before any takes a connection:
// a waiter holding a connection of a small pool could otherwise starve
// the pass it waits for of the connection its next statement needs. An
// entry lives while someone holds or awaits it, so that closed pools are
// not kept.
var localPasses = struct {
	sync.Mutex
	byPool map[*sql.DB]*localPass
}{byPool: map[*sql.DB]*localPass{}}

type localPass struct {
	turn  chan struct{} // a mutex that ctx can give up on
	users int           // holding or awaiting it
}

func localLock(ctx context.Context, pool *sql.DB) (release func(), err error) {
	localPasses.Lock()
	lp := localPasses.byPool[pool]
	if lp == nil {
		lp = &localPass{turn: make(chan struct{}, 1)}
		localPasses.byPool[pool] = lp
	}
	lp.users++
	localPasses.Unlock()
	leave := func() {
		localPasses.Lock()
		if lp.users--; lp.users == 0 {
			delete(localPasses.byPool, pool)
		}
		localPasses.Unlock()
	}
	select {
	case lp.turn <- struct{}{}:
		return func() { <-lp.turn; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, context.Cause(ctx)
	}
}

// LockPass implements sqldialect.PassLocker with a session-level advisory
// lock: it needs no privilege, and the server drops it with the
// connection if the process dies. A host's transaction takes none: its own
// statements are serialised by it. On a pool of one connection the lock's
// session goes back to the pool, where the pass's statements find it (it
// would otherwise wait for the connection the lock holds, for ever); on
// a larger one the lock keeps a connection of its own until the release.
func (Dialect) LockPass(ctx context.Context, db *gorm.DB, shared bool) (func(), error) {
	pool, ok := sqldialect.PoolOf(db)
	if !ok {
		return func() {}, nil
	}
	unlockLocal, err := localLock(ctx, pool)
	if err != nil {
		return nil, err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		unlockLocal()
		return nil, err
	}
	var key int32
	lock, unlock := "pg_advisory_lock", "pg_advisory_unlock"
	if shared {
		lock, unlock = lock+"_shared", unlock+"_shared"
	}
	err = conn.QueryRowContext(ctx, passKey).Scan(&key)
	if err == nil {
		_, err = conn.ExecContext(ctx, `SELECT `+lock+`($1, $2)`, passClass, key)
	}
	if err != nil {
		unlockLocal()
		return nil, errors.Join(err, conn.Close())
	}
	release := func(c interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	}) error {
		_, err := c.ExecContext(context.Background(), `SELECT `+unlock+`($1, $2)`, passClass, key)
		return err
	}
	if pool.Stats().MaxOpenConnections == 1 {
		_ = conn.Close() // back to the pool, holding the lock
		return func() {
			// The pool's only connection is the lock's session, unless the
			// server dropped it meanwhile — and the lock with it.
			_ = release(pool)
			unlockLocal()
		}, nil
	}
	return func() {
		// Unlocked on the server first; a connection that cannot say so
		// is dropped, which unlocks too.
		if release(conn) != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = conn.Close()
		unlockLocal()
	}, nil
}
