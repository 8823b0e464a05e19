//go:build !cgo

package sqlite

import "github.com/subagentctx/subagentctx/core"

// Available reports whether this build can open SQLite: without cgo it
// cannot (ErrNoCgo).
func Available() error { return ErrNoCgo }

// classify knows no code without go-sqlite3.
func classify(error) error { return nil }

// register cannot add functions without go-sqlite3.
func register(any) error { return core.Errorf("sqlite: %w", ErrNoCgo) }
