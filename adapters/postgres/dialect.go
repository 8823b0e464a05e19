package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
)

// Dialect is PostgreSQL's sqlstore.Dialect: its fragments here, its
// message view in messages.go, its catalog and upgrade steps in
// catalog.go, its placement on Citus in citus.go.
type Dialect struct{}

var (
	_ sqlstore.Dialect   = Dialect{}
	_ sqlstore.Placement = Dialect{}
	_ sqlstore.Pipeliner = Dialect{}
)

// Name implements sqlstore.Fragments.
func (Dialect) Name() string { return "postgres" }

// ColumnType implements sqlstore.Fragments. Metrics are BIGINT (the
// upstream 32-bit INTEGER was a defect, docs/CONTRACT.md §8.1); timestamps
// are TIMESTAMPTZ: instants, so neither writing nor comparing depends on
// the session's TimeZone.
func (Dialect) ColumnType(t core.Type) string {
	switch t {
	case core.Int64:
		return "BIGINT"
	case core.Bool:
		return "INTEGER"
	case core.Time:
		return "TIMESTAMPTZ"
	}
	return "TEXT"
}

// Instant implements sqlstore.Fragments. EXTRACT(EPOCH …) is exact
// (numeric) and independent of the session time zone for TIMESTAMPTZ.
func (Dialect) Instant(x string) string { return "(EXTRACT(EPOCH FROM " + x + ") * 1000000)::bigint" }

// Bytewise implements sqlstore.Fragments: the C collation compares bytes,
// whatever the database's own (an ICU locale orders linguistically).
func (Dialect) Bytewise(x string) string { return x + ` COLLATE "C"` }

// Upsert implements sqlstore.Fragments with a function, so that the
// upsert stays one statement at the seam (docs/CONTRACT.md §8.5): it
// hands a backfilled row of the pair to the frame's execution, then runs
// the INSERT … ON CONFLICT, which merges the frame into that row. One SQL
// statement cannot do both (an ON CONFLICT cannot update a row its own
// statement changed), and a function's statements each see the one
// before; its plans are cached per connection, and Citus routes each to
// its shard. The name carries a digest of the body: a new body (a new
// column) gets a new function, created beside the old one, which an older
// build still running may call.
func (d Dialect) Upsert(u sqlstore.UpsertParts) ([]string, string) {
	types, params := make([]string, len(core.Columns)), make([]string, len(core.Columns))
	position := map[string]string{}
	for i, c := range core.Columns {
		types[i] = strings.ToLower(d.ColumnType(c.Type))
		params[i] = "$" + strconv.Itoa(i+1)
		position[c.Name] = params[i]
	}
	body := u.Adopt(func(c string) string { return position[c] }) + ";\n\t" + u.Insert + ";"
	sum := sha256.Sum256([]byte(body))
	name := "subagentctx_upsert_" + hex.EncodeToString(sum[:4])
	signature := name + "(" + strings.Join(types, ",") + ")"
	create := `DO $do$ BEGIN
IF to_regprocedure('` + signature + `') IS NULL THEN
CREATE FUNCTION ` + signature + ` RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	` + body + `
END $f$;
END IF;
END $do$`
	return []string{create}, "SELECT " + name + "(" + strings.Join(params, ", ") + ")"
}

// Classify implements sqlstore.Fragments: SQLSTATE class 23 is a
// constraint violation; class 08, admin shutdown (57P01-57P03), and
// connection-level failures are unavailability.
func (Dialect) Classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "23"):
			return core.ErrConstraint
		case strings.HasPrefix(pgErr.Code, "08"), pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03":
			return core.ErrUnavailable
		}
		return nil
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) {
		return core.ErrUnavailable
	}
	return nil
}

// CheckHandle implements sqlstore.Fragments: the database must be UTF-8,
// the encoding every identifier and text rule of the contract is stated in
// (docs/CONTRACT.md §2, §4.2).
func (Dialect) CheckHandle(ctx context.Context, db *gorm.DB) error {
	var encoding string
	if err := db.WithContext(ctx).Raw(`SHOW server_encoding`).Scan(&encoding).Error; err != nil {
		return err
	}
	if encoding != "UTF8" {
		return fmt.Errorf("%w: the database's encoding is %s: subagentctx needs a UTF8 database (CREATE DATABASE … ENCODING 'UTF8')",
			sqlstore.ErrHandleSettings, encoding)
	}
	return nil
}

// Writers implements sqlstore.Fragments: PostgreSQL writes rows of
// different keys in parallel.
func (Dialect) Writers() int { return 4 }

// Pipeline implements sqlstore.Pipeliner through pgx's batch protocol: the
// statements of one transaction travel in one round trip instead of one
// each (measured: about 5 times the frames a second on a local server,
// where the round trip dominates). A pool whose driver is not pgx's stdlib
// is declined.
func (Dialect) Pipeline(ctx context.Context, pool *sql.DB, query string, args [][]any) (at int, ok bool, err error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return -1, true, err
	}
	defer conn.Close()
	at, ok = -1, true
	err = conn.Raw(func(driverConn any) error {
		c, isPgx := driverConn.(*stdlib.Conn)
		if !isPgx {
			ok = false
			return nil
		}
		tx, err := c.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		var b pgx.Batch
		for _, a := range args {
			b.Queue(query, a...)
		}
		results := tx.SendBatch(ctx, &b)
		for i := range args {
			if _, err := results.Exec(); err != nil {
				at = i
				return errors.Join(err, results.Close(), tx.Rollback(ctx))
			}
		}
		if err := results.Close(); err != nil {
			return errors.Join(err, tx.Rollback(ctx))
		}
		return tx.Commit(ctx)
	})
	return at, ok, err
}
