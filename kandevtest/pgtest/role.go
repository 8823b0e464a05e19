package pgtest

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"

	"gorm.io/gorm"
)

// NewRole creates a login role for the test on the server db is connected
// to (roles are the cluster's: it is dropped at the test's cleanup), with
// USAGE on db's current schema and the statements grant returns for it,
// and returns its name and dsn with the role as its user. The servers
// here trust loopback: no password.
func NewRole(t testing.TB, db *gorm.DB, dsn string, grant func(role string) []string) (role, roleDSN string) {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	role = "app_" + hex.EncodeToString(b)
	var schema string
	if err := db.Raw(`SELECT current_schema()`).Scan(&schema).Error; err != nil {
		t.Fatal(err)
	}
	stmts := append([]string{`CREATE ROLE ` + role + ` LOGIN`, `GRANT USAGE ON SCHEMA "` + schema + `" TO ` + role},
		grant(role)...)
	for _, q := range stmts {
		if err := db.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		db.Exec(`DROP OWNED BY ` + role)
		db.Exec(`DROP ROLE ` + role)
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return role, u.String()
}
