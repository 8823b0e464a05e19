//go:build !unix

package sqlite

import "os"

// tryLock has no cross-process file lock here: the pass's steps are
// guarded by their own transactions only (docs/development.md, the requirements).
func tryLock(*os.File, bool) (bool, error) { return true, nil }

func unlock(*os.File) {}

// ownLike leaves a new lock file's owner as it is here.
func ownLike(*os.File, string) error { return nil }
