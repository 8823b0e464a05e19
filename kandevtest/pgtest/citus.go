package pgtest

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
)

// EnvCitusDSN names the variable holding a Citus cluster's coordinator
// (scripts/test starts one, a coordinator and two workers on loopback, when
// Citus is installed for the local PostgreSQL).
const EnvCitusDSN = "SUBAGENTCTX_TEST_CITUS_DSN"

// EnvCitusRequired, set to 1 (.ci/run sets it once it has installed
// Citus), makes a missing cluster fail the Citus suites instead of
// skipping them.
const EnvCitusRequired = "SUBAGENTCTX_TEST_CITUS_REQUIRED"

// CitusAvailable reports whether a Citus cluster was provided, or must be.
func CitusAvailable() bool {
	return (os.Getenv(EnvCitusDSN) != "" || os.Getenv(EnvCitusRequired) == "1") && !sqliteOnly()
}

// NewCitusSchema creates an empty schema for this test on the Citus
// cluster (Citus creates it on every node), dropped with everything in it
// at cleanup, and returns a DSN whose search_path is that schema and whose
// session time zone is SessionTimeZone. A schema rather than a database:
// each database of a cluster needs the extension and the nodes registered
// anew. Without a cluster the test skips with a message.
func NewCitusSchema(t testing.TB) string {
	t.Helper()
	skipInSQLiteRun(t)
	admin := os.Getenv(EnvCitusDSN)
	if admin == "" {
		if os.Getenv(EnvCitusRequired) == "1" {
			t.Fatalf("%s is not set but %s=1: the Citus suites must run", EnvCitusDSN, EnvCitusRequired)
		}
		t.Skipf("Citus suites skipped: %s is not set "+
			"(scripts/test starts a cluster when Citus is installed for the local PostgreSQL)", EnvCitusDSN)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "subagentctx_" + hex.EncodeToString(b)
	db := open(t, admin)
	if err := db.Exec(`CREATE SCHEMA ` + name).Error; err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		db.Exec(`DROP SCHEMA IF EXISTS ` + name + ` CASCADE`)
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", EnvCitusDSN, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String() + "&timezone=" + SessionTimeZone
}
