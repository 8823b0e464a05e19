package sqltest_test

import (
	"fmt"
	"os"
	"testing"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
)

// A dialect's test supplies a Driver and runs the whole suite on it:
// func TestSQL(t *testing.T) { sqltest.Exercise(t, myDriver()) }. This one
// drives PostgreSQL's dialect, standing in for a third: a fresh database
// per test, the adapter's New, a store whose server cannot be reached, and
// a failure injected into inserts. A dialect that starts at this build's
// table leaves the earlier shapes nil: their upgrade tests skip, saying
// so. Where it differs from the others, the Dialect declares it
// (HostTimeText, the optional interfaces), not the Driver.
func ExampleDriver() {
	driver := &sqltest.Driver{
		Name:    "mydialect",
		Dialect: postgres.Dialect{},
		Open: func(t testing.TB) (*gorm.DB, string) {
			// A database of this test's own, dropped at its cleanup:
			// here, one the test's environment names.
			dsn := os.Getenv("MYDIALECT_TEST_DSN")
			db, err := postgres.OpenDB(dsn)
			if err != nil {
				t.Fatal(err)
			}
			return db, dsn
		},
		New: postgres.New,
		Unavailable: func(t testing.TB) (*sqlstore.Store, string) {
			const password = "s3cret" // the suite checks that no error shows it
			db, err := postgres.OpenDB("postgres://u:" + password + "@127.0.0.1:1/db?connect_timeout=2")
			if err != nil {
				t.Fatal(err)
			}
			s, err := postgres.New(db)
			if err != nil {
				t.Fatal(err)
			}
			return s, password
		},
		FailInserts: func(t testing.TB, db *gorm.DB, toolCallID string) (stop func()) {
			for _, q := range []string{
				`CREATE FUNCTION fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
					IF NEW.tool_call_id = '` + toolCallID + `' THEN RAISE EXCEPTION 'injected failure'; END IF;
					RETURN NEW; END $$`,
				`CREATE TRIGGER fail_insert BEFORE INSERT ON task_session_subagents
					FOR EACH ROW EXECUTE FUNCTION fail_insert()`,
			} {
				if err := db.Exec(q).Error; err != nil {
					t.Fatal(err)
				}
			}
			return func() { db.Exec(`DROP TRIGGER fail_insert ON task_session_subagents`) }
		},
	}
	// In the dialect's test: sqltest.Exercise(t, driver).
	fmt.Println(driver.Name, "runs the suite with", driver.Dialect.Name())
}
