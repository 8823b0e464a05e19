//go:build unix

package sqlite

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// tryLock takes flock(2) on f without waiting: false when another holds it.
func tryLock(f *os.File, shared bool) (bool, error) {
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// ownLike gives a lock file root made the database file's owner and
// group; anyone else's stays theirs (only root may give a file away).
func ownLike(f *os.File, db string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Stat(db)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a database SQLite has not written yet: root's, like the file it will make
	}
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return f.Chown(int(st.Uid), int(st.Gid))
}
