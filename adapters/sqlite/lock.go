package sqlite

import (
	"context"
	"fmt"
	"os"
	"time"

	"gorm.io/gorm"
)

// LockPass implements sqlstore.PassLocker with a lock on a file beside the
// database (<database>-subagentctx-pass): every process opening the same
// file, and every store in this one, waits on it, and the operating system
// drops it with a process that dies. An in-memory database has no file
// and no other process: each step's own transaction is its guard there.
// A directory where the lock file cannot be made holds no pass but a
// reader's: a shared lock is then not taken (no pass can be running).
func (Dialect) LockPass(ctx context.Context, db *gorm.DB, shared bool) (func(), error) {
	var rows []struct {
		Name, File string
	}
	if err := db.WithContext(ctx).Raw(`SELECT name, file FROM pragma_database_list`).Scan(&rows).Error; err != nil {
		return nil, err
	}
	path := ""
	for _, r := range rows {
		if r.Name == "main" {
			path = r.File
		}
	}
	if path == "" {
		return func() {}, nil
	}
	name := path + "-subagentctx-pass"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if shared {
			return func() {}, nil
		}
		return nil, fmt.Errorf("open the migration pass's lock file: %w", err)
	}
	// Polled, so that ctx ends the wait.
	for {
		locked, err := tryLock(f, shared)
		switch {
		case err != nil:
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		case locked:
			return func() { unlock(f); f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another migration pass (%s): %w", name, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
