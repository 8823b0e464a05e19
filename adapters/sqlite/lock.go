package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"gorm.io/gorm"
)

// LockPass implements sqldialect.PassLocker with a lock on a file beside the
// database (<database>-subagentctx-pass): every process opening the same
// file, and every store in this one, waits on it, and the operating system
// drops it with a process that dies. An in-memory database has no file
// and no other process: each step's own transaction is its guard there.
// The file is opened read-only, which is all flock(2) needs, so that one
// made by any user serves every user who may read the database.
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
	f, err := openLockFile(name, path, shared)
	if err != nil || f == nil {
		return func() {}, err
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

// openLockFile opens the pass's lock file name beside the database file
// db, read-only. A pass makes it when it is missing: readable by every
// user, and owned like the database when made by root (as SQLite does its
// own -wal and -shm files), so that "sudo subagentctl migrate" leaves
// nothing the application's user cannot open. A reader (shared) never
// makes it: with no file, no pass can be running (nil, nil). A file that
// cannot be opened is an error naming it — for a reader too, which then
// cannot vouch that no pass is running.
func openLockFile(name, db string, shared bool) (*os.File, error) {
	f, err := os.Open(name)
	switch {
	case err == nil:
		return f, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open the migration pass's lock file: %w", err)
	case shared:
		return nil, nil
	}
	f, err = os.OpenFile(name, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		f, err = os.Open(name) // made meanwhile by another pass
	} else if err == nil {
		err = errors.Join(f.Chmod(0o644), ownLike(f, db)) // whatever the umask
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, fmt.Errorf("make the migration pass's lock file: %w", err)
	}
	return f, nil
}
