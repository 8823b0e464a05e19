// Package pgtest gives tests a fresh database on a throw-away PostgreSQL
// server (the one scripts/test starts, named by SUBAGENTCTX_TEST_POSTGRES_DSN),
// for the library's tests and a host's alike: real parts, not mocks.
// Without that server the tests skip with a message, except under CI=true,
// where a missing PostgreSQL fails the run.
//
// Stability: a test fixture, not covered by the module's semver promise: it
// may change in any version (README, Stability).
package pgtest

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// EnvDSN names the variable holding the admin DSN (a postgres:// URL).
const EnvDSN = "SUBAGENTCTX_TEST_POSTGRES_DSN"

// SessionTimeZone is the non-UTC session time zone every test database
// connection uses, so that nothing can silently depend on UTC sessions.
const SessionTimeZone = "Asia/Kolkata"

// EnvSQLiteOnly, set to 1, marks a run of the suites for SQLite alone —
// scripts/test's run without cgo, which tests SQLite on its pure-Go
// driver, where PostgreSQL is pgx either way and its suites ran already:
// the PostgreSQL and Citus tests skip, saying so, even under CI=true.
const EnvSQLiteOnly = "SUBAGENTCTX_TEST_SQLITE_ONLY"

// sqliteOnly reports whether this run is SQLite's alone (EnvSQLiteOnly).
func sqliteOnly() bool { return os.Getenv(EnvSQLiteOnly) == "1" }

// skipInSQLiteRun skips a PostgreSQL test in a run of SQLite's alone.
func skipInSQLiteRun(t testing.TB) {
	t.Helper()
	if sqliteOnly() {
		t.Skipf("PostgreSQL tests skipped: %s=1, a run of the SQLite suites alone", EnvSQLiteOnly)
	}
}

// AdminDSN returns the server's DSN or skips (fails under CI=true, but in
// a run of SQLite's alone).
func AdminDSN(t testing.TB) string {
	t.Helper()
	skipInSQLiteRun(t)
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set under CI=true: the PostgreSQL tests must run (use scripts/test)", EnvDSN)
		}
		t.Skipf("PostgreSQL tests skipped: %s is not set (scripts/test starts a server and sets it)", EnvDSN)
	}
	return dsn
}

// ICULocale is the CREATE DATABASE clause of a database whose default
// collation is ICU's linguistic one (a collation under which "a" < "B",
// where byte order says "B" < "a").
const ICULocale = "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8' ENCODING 'UTF8'"

// NewDatabase creates an empty database for this test, dropped at cleanup,
// and returns its DSN with the session time zone set to SessionTimeZone.
// with is appended to CREATE DATABASE (ICULocale, say).
func NewDatabase(t testing.TB, with ...string) string {
	t.Helper()
	admin := AdminDSN(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "subagentctx_" + hex.EncodeToString(b)
	db := open(t, admin)
	if err := db.Exec(`CREATE DATABASE ` + name + ` ` + strings.Join(with, " ")).Error; err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", EnvDSN, err)
	}
	u.Path = "/" + name
	// Appended verbatim: pgx does not unescape %2F in runtime parameters.
	sep := "?"
	if u.RawQuery != "" {
		sep = "&"
	}
	return u.String() + sep + "timezone=" + SessionTimeZone
}

// Open connects to dsn, closing at cleanup.
func Open(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db := open(t, dsn)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return db
}

func open(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(gormpostgres.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	return db
}

// Available reports whether a PostgreSQL server was provided.
func Available() bool { return os.Getenv(EnvDSN) != "" && !sqliteOnly() }

// Required reports whether the PostgreSQL tests must run (CI=true): a test
// that would leave PostgreSQL out when it is not Available must include it
// then, so that it fails rather than passes without it.
func Required() bool { return os.Getenv("CI") == "true" && !sqliteOnly() }
