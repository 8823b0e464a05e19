package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
)

// TestPairLocksNeedExecuteNamedAtBoot (docs/CONTRACT.md §4.4): a write of
// several rows takes its pairs' locks with pg_advisory_xact_lock, which
// every role may call unless the database revoked it from PUBLIC. Where it
// did, a role holding every table privilege of the live part is refused at
// boot with ErrPrivilege naming the function and its GRANT — not one failed
// batch after another — and, granted it, passes; the read part needs none.
func TestPairLocksNeedExecuteNamedAtBoot(t *testing.T) {
	e := testenv.Postgres().Env(t)
	ctx := context.Background()
	grants := func(part sqlstore.Part) func(string) []string {
		return func(role string) []string {
			stmts, err := sqlstore.GrantSQL(e.Tables, part, role)
			if err != nil {
				t.Fatal(err)
			}
			return stmts
		}
	}
	role, live := pgtest.NewRole(t, e.DB, e.DSN, grants(sqlstore.PartLive))
	_, read := pgtest.NewRole(t, e.DB, e.DSN, grants(sqlstore.PartRead))
	check := func(dsn string, part sqlstore.Part) error { return storeAs(t, dsn).CheckPrivileges(ctx, part) }
	if err := check(live, sqlstore.PartLive); err != nil {
		t.Fatalf("the live part's grants, the function PUBLIC's: %v", err)
	}
	e.Exec(t, `REVOKE EXECUTE ON FUNCTION pg_advisory_xact_lock(integer, integer) FROM PUBLIC`)
	err := check(live, sqlstore.PartLive)
	grant := "GRANT EXECUTE ON FUNCTION pg_advisory_xact_lock(integer, integer) TO the role"
	if !errors.Is(err, sqlstore.ErrPrivilege) || !strings.Contains(err.Error(), grant) {
		t.Errorf("the live part without the function: %v; want ErrPrivilege saying %q", err, grant)
	}
	if err := check(read, sqlstore.PartRead); err != nil {
		t.Errorf("the read part, which writes no row, without the function: %v", err)
	}
	e.Exec(t, `GRANT EXECUTE ON FUNCTION pg_advisory_xact_lock(integer, integer) TO `+role)
	if err := check(live, sqlstore.PartLive); err != nil {
		t.Errorf("the live part granted the function: %v", err)
	}
}
