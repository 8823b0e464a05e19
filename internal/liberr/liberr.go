// Package liberr gives the library's errors their one prefix: every
// package of the module, host-side or store-side, builds its errors here,
// so that a message starts with "subagentctx: " exactly once, however
// deeply the errors it wraps nest.
package liberr

import (
	"fmt"
	"strings"
)

// Prefix starts every error the library returns, once.
const Prefix = "subagentctx: "

// Errorf is fmt.Errorf for the library's errors: the message starts with
// Prefix once, whatever the errors it wraps say (theirs is dropped), and
// %w keeps them reachable for errors.Is and errors.As.
func Errorf(format string, args ...any) error {
	return &prefixed{fmt.Errorf(format, args...)}
}

type prefixed struct{ err error }

func (e *prefixed) Error() string { return Prefix + Unprefixed(e.err) }
func (e *prefixed) Unwrap() error { return e.err }

// Unprefixed is an error's message without the library's prefix anywhere
// in it (a wrapped error of the library's carries one).
func Unprefixed(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.ReplaceAll(err.Error(), Prefix, "")
}
