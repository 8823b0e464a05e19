package sqltest

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storetest"
)

var errorTests = []test{
	{"UnavailableIsMatchable", testUnavailable},
	{"ConstraintIsMatchable", testConstraint},
}

// testUnavailable: a database that cannot be reached (or is locked past its
// busy timeout) gives core.ErrUnavailable, never ErrConstraint, on a write
// and on a read, and no error shows the DSN's password.
func testUnavailable(t *testing.T, d *Driver) {
	s, password := d.Unavailable(t)
	row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c", ObservedAt: time.Now()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, err := range map[string]error{"upsert": s.Upsert(ctx, row), "migration pass": s.EnsureSchema(ctx)} {
		storetest.WantError(t, name, err, core.ErrUnavailable)
		var op *core.OpError
		if !errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrConstraint) || !errors.As(err, &op) {
			t.Errorf("%s: err = %v, want an *OpError matching ErrUnavailable", name, err)
		}
		if err != nil && password != "" && strings.Contains(err.Error(), password) {
			t.Errorf("%s: the error shows the DSN's password: %v", name, err)
		}
	}
}

// testConstraint: a row for a session the host does not have is
// ErrConstraint and names the operation and the key.
func testConstraint(t *testing.T, d *Driver) {
	e := d.Env(t)
	row, _ := core.Normalize(
		core.Frame{TaskSessionID: "no-such-session", TaskID: "t", ToolCallID: "c", ObservedAt: time.Now()},
	)
	err := e.Store.Upsert(context.Background(), row)
	storetest.WantError(t, "unknown session", err, core.ErrConstraint)
	var op *core.OpError
	if !errors.Is(err, core.ErrConstraint) || errors.Is(err, core.ErrUnavailable) || !errors.As(err, &op) ||
		op.Op != "upsert" || !strings.Contains(err.Error(), "no-such-session") ||
		!strings.Contains(err.Error(), `tool_call_id="c"`) {
		t.Errorf("err = %v", err)
	}
	// The frame's own cause first, whatever came with it: a rollback's
	// broken connection joined to the refusal is still the frame's fault
	// (a retry would be refused again).
	for _, with := range []error{driver.ErrBadConn, io.ErrUnexpectedEOF, context.DeadlineExceeded} {
		if got := d.Dialect.Classify(errors.Join(op.Err, with)); !errors.Is(got, core.ErrConstraint) {
			t.Errorf("a constraint joined with %v classifies as %v, want core.ErrConstraint", with, got)
		}
		if got := d.Dialect.Classify(errors.Join(with, op.Err)); !errors.Is(got, core.ErrConstraint) {
			t.Errorf("%v joined with a constraint classifies as %v, want core.ErrConstraint", with, got)
		}
	}
}
